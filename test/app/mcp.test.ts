// The MCP endpoint end to end, with the real MCP client over Streamable HTTP against the app
// listening on a port: public by default (the client connects with no credentials at all), each
// tool's authorization (its securitySchemes, the per-tool challenge of protected tools), tokens
// bound to /mcp (RFC 8707), resources (the two app views), tools (every one called, with and
// without a token), the lead path shared with HTTP, the anonymous budget, the project pages, and
// what reaches the logs. The Origin rule has its own file (mcp-origin.test.ts).

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import t, { type Test } from 'tap'
import { loadViews } from '../../features/mcp/views.js'
import { loadPlaybook as loadPlaybookFrom } from '../../features/playbook/index.js'
import { OVERVIEW_PROJECTS_PER_STYLE } from '../../features/playbook/view.js'
import { Pricing } from '../../features/pricing/index.js'
import { loadPricingModel } from '../../features/pricing/model.js'
import { call, leadOf, newClient, spec, testApp, tokenFor } from '../helpers/app.js'
import { connect, type Live, live, mcpToken, textOf } from '../helpers/mcp.js'

type Structured = Record<string, unknown>

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const PUBLIC_TOOLS = ['estimate_price', 'list_projects', 'show_playbook', 'show_pricing_estimator']
const ALL_TOOLS = [...PUBLIC_TOOLS, 'recent_leads', 'request_consultation'].sort()

/** A consultation as the tool takes it: the lead and the person's consent. */
const consultation = (n: number | string, extra: Structured = {}) => ({ ...leadOf(n), consent: true, ...extra })

/** tools/list as it is on the wire (the SDK client drops descriptor fields it does not know). */
async function rawToolList(base: string, headers: Record<string, string> = {}): Promise<Structured[]> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders, 'mcp-protocol-version': '2025-06-18', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
  })
  const text = await res.text()
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text
  return (JSON.parse(data) as { result: { tools: Structured[] } }).result.tools
}

/** The per-tool challenge of a refused call (`_meta["mcp/www_authenticate"]`). */
const challengeOf = (result: { _meta?: Structured | undefined }): string[] =>
  (result._meta?.['mcp/www_authenticate'] as string[] | undefined) ?? []

/** The leads log as GET /leads.json returns it (a REST token with read:leads). */
async function leadsLog(t: Test, { app }: Live): Promise<Structured[]> {
  const reader = await tokenFor(app, ['read:leads'])
  return (await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${reader.token}` } })).json()
}

t.test('RFC 9728 protected-resource metadata of /mcp, and the authorization server that names it', async (t) => {
  const { base } = await live(t)
  const res = await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^application\/json/)
  const doc = (await res.json()) as Structured
  t.same(doc, {
    resource: `${base}/mcp`,
    authorization_servers: [base],
    scopes_supported: ['read:projects', 'read:leads', 'write:leads'],
    bearer_methods_supported: ['header'],
    resource_name: 'Atelier Lumen studio MCP server',
    resource_documentation: `${base}/docs`,
  })
  // The authorization server it names publishes its metadata, whose token endpoint issues tokens for that resource.
  const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Structured
  t.equal(as.issuer, base)
  t.equal(as.token_endpoint, `${base}/api/token`)
  t.same(as.protected_resources, [base, `${base}/mcp`], 'RFC 9728 §4: the resources tokens can be requested for')
})

// The MCP client SDK runs its OAuth flow only on an HTTP 401/403, while /mcp now answers a protected
// tool with a per-tool challenge inside a 200 result; and its ClientCredentialsProvider refuses our
// RFC 8414 document, which has no `authorization_endpoint` (its schema requires one even for a
// client_credentials-only server). So an SDK client that holds only client credentials does not get
// a token for recent_leads by itself; it has to request one (see the README, "Connecting a host").
const SDK_CLIENT_CREDENTIALS_GAP =
  'the MCP client SDK neither reacts to per-tool challenges nor accepts authorization-server metadata without authorization_endpoint'

t.test('an OAuth client answers the per-tool challenge by itself (client_credentials)', { todo: SDK_CLIENT_CREDENTIALS_GAP }, async (t) => {
  const { app, base } = await live(t)
  const creds = await newClient(app, ['read:leads'])
  const provider = new ClientCredentialsProvider({
    clientId: creds.client_id,
    clientSecret: creds.client_secret,
    expectedIssuer: base,
    scope: 'read:leads',
  })
  const client = new Client({ name: 'm2m', version: '1.0.0' })
  t.teardown(() => client.close())
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }))
  const recent = await client.callTool({ name: 'recent_leads', arguments: {} })
  t.notOk(recent.isError, textOf(recent))
  t.same(recent.structuredContent, { leads: [] })
})

t.test('a body that is not JSON (or no body) is refused before it is read, like any operation body', async (t) => {
  const l = await live(t)
  const token = await mcpToken(l, ['read:projects'])
  for (const auth of [{ authorization: `Bearer ${token}` }, {}]) {
    const headers = { ...auth, accept: 'application/json, text/event-stream' }
    const label = auth.authorization ? 'with a token' : 'anonymous'
    const text = await l.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { ...headers, 'content-type': 'text/plain' },
      payload: 'hello',
    })
    t.equal(text.statusCode, 415, `${label}: 415`)
    t.equal(text.json().code, 'unsupported_media_type')
    t.match(text.json().hint, /application\/json/)
    const empty = await l.app.inject({ method: 'POST', url: '/mcp', headers })
    t.equal(empty.statusCode, 400, `${label}: 400`)
    t.equal(empty.json().code, 'invalid_request')
    t.match(empty.json().hint, /application\/json/)
    t.match(
      empty.json(),
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: empty.json().message } },
      'also a JSON-RPC error: no JSON received, a parse error',
    )
  }
})

t.test('without credentials /mcp is public; credentials that are sent are verified, never taken as anonymous', async (t) => {
  const l = await live(t)
  const { app, base } = l
  const metadata = `${base}/.well-known/oauth-protected-resource/mcp`

  // No credentials: served (this was a 401 before /mcp became public by default).
  const none = await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: JSON.stringify(initialize) })
  t.equal(none.status, 200, 'initialize without a token')
  t.equal(none.headers.get('www-authenticate'), null, 'no challenge')
  t.match(none.headers.get('x-ratelimit-limit'), /^\d+$/, 'rate-limited like every route')
  t.equal(none.headers.get('x-api-version'), spec.version)

  for (const authorization of ['Bearer not-a-jwt', 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln', 'Bearer ', 'Basic dTpw']) {
    const bad = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, authorization }, body: JSON.stringify(initialize) })
    t.equal(bad.status, 401, `${authorization}: 401`)
    const challenge = bad.headers.get('www-authenticate') ?? ''
    t.match(
      challenge,
      /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="([^"]+)"$/,
      `${authorization}: challenge`,
    )
    t.ok(challenge.endsWith(`resource_metadata="${metadata}"`))
    const body = (await bad.json()) as Structured
    t.equal(body.code, 'unauthorized')
    t.match(body, { jsonrpc: '2.0', id: null, error: { code: -32000 } }, `${authorization}: also a JSON-RPC error`)
  }

  // A token of another issuer (an app with another key and base URL) is refused as well.
  const other = await testApp(t)
  const foreign = await tokenFor(other.app, ['read:projects'])
  const forged = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders, authorization: `Bearer ${foreign.token}` },
    body: JSON.stringify(initialize),
  })
  t.equal(forged.status, 401)

  // So is a token of ours for another resource (RFC 8707): the REST API's, the default.
  const rest = await tokenFor(app, ['read:projects', 'read:leads'])
  const forRest = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders, authorization: `Bearer ${rest.token}` },
    body: JSON.stringify(initialize),
  })
  t.equal(forRest.status, 401, 'a token for the REST API is refused by /mcp')
  t.match(((await forRest.json()) as Structured).hint, `resource=${base}/mcp`, 'the hint names the resource to ask for')
  t.match(forRest.headers.get('www-authenticate'), /^Bearer error="invalid_token"/)
  const forMcp = await mcpToken(l, ['read:projects'])
  const ok = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...mcpHeaders, authorization: `Bearer ${forMcp}` },
    body: JSON.stringify(initialize),
  })
  t.equal(ok.status, 200, 'a token for /mcp is accepted')

  // The SDK client without credentials connects (it could not before), and lists the tools.
  const client = await connect(t, base, null)
  t.same((await client.listTools()).tools.map((tool) => tool.name).sort(), ALL_TOOLS)

  // Only POST: GET (no SSE stream on a stateless endpoint) and DELETE are 405 with Allow.
  const get = await call(t, app, { method: 'GET', url: '/mcp' })
  t.equal(get.statusCode, 405)
  t.equal(get.headers.allow, 'POST')
})

t.test('each tool declares what it needs: securitySchemes on the descriptor and in _meta', async (t) => {
  for (const [label, anonymous] of [
    ['anonymous consultations on (default)', true],
    ['anonymous consultations off', false],
  ] as const) {
    const { base } = await live(t, { mcpAnonymousConsultations: anonymous })
    const tools = new Map((await rawToolList(base)).map((tool) => [tool.name as string, tool]))
    const expected: Record<string, Structured[]> = {
      show_playbook: [{ type: 'noauth' }],
      show_pricing_estimator: [{ type: 'noauth' }],
      estimate_price: [{ type: 'noauth' }],
      list_projects: [{ type: 'noauth' }],
      request_consultation: anonymous
        ? [{ type: 'noauth' }, { type: 'oauth2', scopes: ['write:leads'] }]
        : [{ type: 'oauth2', scopes: ['write:leads'] }],
      recent_leads: [{ type: 'oauth2', scopes: ['read:leads'] }],
    }
    t.same([...tools.keys()].sort(), Object.keys(expected).sort(), `${label}: every tool listed`)
    for (const [name, schemes] of Object.entries(expected)) {
      const tool = tools.get(name)
      t.same(tool?.securitySchemes, schemes, `${label}: ${name} securitySchemes`)
      t.same((tool?._meta as Structured | undefined)?.securitySchemes, schemes, `${label}: ${name} _meta.securitySchemes (mirror)`)
    }
  }
})

t.test('a protected tool called without a sufficient token answers the per-tool challenge; the session goes on', async (t) => {
  const l = await live(t)
  const { app, base } = l
  const metadata = `${base}/.well-known/oauth-protected-resource/mcp`
  const token = await mcpToken(l, ['read:projects'])

  for (const mode of ['legacy', 'auto'] as const) {
    const client = await connect(t, base, token, mode)
    // A valid token without read:leads: insufficient_scope, with the scope and the metadata.
    const recent = await client.callTool({ name: 'recent_leads', arguments: {} })
    t.equal(recent.isError, true, `${mode}: a tool error, not a failed request`)
    t.same(
      challengeOf(recent),
      [
        `Bearer error="insufficient_scope", error_description="${textOf(recent).split(' Hint:')[0]}", scope="read:leads", resource_metadata="${metadata}"`,
      ],
      `${mode}: the insufficient_scope challenge in _meta["mcp/www_authenticate"]`,
    )
    t.match(textOf(recent), /recent_leads needs the scope read:leads.*Hint: .*resource=.*\/mcp and the scope read:leads/)
    // The same for request_consultation: a token that is sent must grant write:leads, even though
    // anonymous consultations are on.
    const consult = await client.callTool({ name: 'request_consultation', arguments: consultation(1) })
    t.equal(consult.isError, true, `${mode}: request_consultation with a token without write:leads`)
    t.match(challengeOf(consult)[0], /^Bearer error="insufficient_scope", .*scope="write:leads"/)
    // The session is still good: tools that need nothing more answer.
    const estimate = await client.callTool({ name: 'estimate_price', arguments: { area_sqm: 80 } })
    t.notOk(estimate.isError, `${mode}: the next call works`)
    const projects = await client.callTool({ name: 'list_projects', arguments: { city: 'Paris' } })
    t.notOk(projects.isError)
  }
  t.equal(await app.leads.count(), 0, 'nothing stored by a refused call')

  // With read:leads the same tool answers.
  const reader = await connect(t, base, await mcpToken(l, ['read:leads']))
  const recent = await reader.callTool({ name: 'recent_leads', arguments: {} })
  t.notOk(recent.isError)
  t.same(recent.structuredContent, { leads: [] })
})

t.test(
  'no credentials at all: views, every public tool, a consultation with its note, the anonymous budget, the challenge of recent_leads',
  async (t) => {
    const l = await live(t, { rateLimits: { requestConsultationAnonymous: { max: 3, window: '1 minute' } } })
    const { app, config, base } = l
    const client = await connect(t, base, null)

    t.same((await client.listTools()).tools.map((tool) => tool.name).sort(), ALL_TOOLS, 'every tool is listed')
    for (const name of ['playbook', 'pricing-estimator']) {
      const read = await client.readResource({ uri: `ui://${config.publicHost}/${name}` })
      t.match((read.contents[0] as { text?: string }).text, /<html/i, `${name}: the view, read without a token`)
    }
    const calls: [string, Structured][] = [
      ['show_playbook', { style: 'Japandi' }],
      ['show_pricing_estimator', { area_sqm: 90, city: 'Lisbon' }],
      ['estimate_price', { area_sqm: 140, service_level: 'turnkey' }],
      ['list_projects', { country: 'JP' }],
    ]
    t.same(calls.map(([name]) => name).sort(), PUBLIC_TOOLS, 'every public tool is called')
    for (const [name, args] of calls) {
      const result = await client.callTool({ name, arguments: args })
      t.notOk(result.isError, `${name}: answered without a token`)
      t.ok(result.structuredContent && textOf(result).length > 0, `${name}: text and structured content`)
    }

    // A consultation needs the person's consent: refused clearly without it (spends one of the 3).
    const refused = await client.callTool({ name: 'request_consultation', arguments: leadOf(1) })
    t.equal(refused.isError, true)
    t.match(textOf(refused), /Invalid consent: .*Hint: .*`consent` must be true: ask the person/)
    t.equal(await app.leads.count(), 0, 'nothing stored without consent')

    // With it, stored like submitLead's (no client: anonymous), with the note, in GET /leads.json.
    const note = 'A loft in Porto, ideally before the summer'
    const filed = await client.callTool({ name: 'request_consultation', arguments: consultation(2, { note }) })
    t.notOk(filed.isError, textOf(filed))
    const receipt = filed.structuredContent as { id: string; received_at: string; status: string }
    t.equal(receipt.status, 'received')
    t.match(textOf(filed), /note was passed on/)
    t.same(
      await leadsLog(t, l),
      [
        {
          id: receipt.id,
          ...leadOf(2),
          note,
          received_at: receipt.received_at,
          client_id: null,
          source: 'agent',
          consented_at: receipt.received_at,
        },
      ],
      'GET /leads.json shows it, note included',
    )

    // The anonymous budget of this address: the third call is the last one.
    t.notOk((await client.callTool({ name: 'request_consultation', arguments: consultation(3) })).isError)
    const spent = await client.callTool({ name: 'request_consultation', arguments: consultation(4) })
    t.equal(spent.isError, true, 'over the budget: a tool error')
    t.match(textOf(spent), /^Too many request_consultation calls without an access token from this address\. Hint: retry after \d+ seconds/)
    t.equal(await app.leads.count(), 2, 'nothing stored over the budget')
    t.notOk((await client.callTool({ name: 'estimate_price', arguments: { area_sqm: 60 } })).isError, 'other tools still answer')

    // A protected tool: the challenge, without an error code (no token was sent, RFC 6750 §3.1).
    const recent = await client.callTool({ name: 'recent_leads', arguments: {} })
    t.equal(recent.isError, true)
    t.same(challengeOf(recent), [`Bearer scope="read:leads", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`])
    t.match(textOf(recent), /recent_leads needs an access token with the scope read:leads/)
  },
)

t.test(
  'anonymous consultations off (MCP_ANONYMOUS_CONSULTATIONS=false): the per-tool challenge; a token with write:leads files',
  async (t) => {
    const l = await live(t, { mcpAnonymousConsultations: false })
    const { app, base } = l
    const anonymous = await connect(t, base, null)
    const refused = await anonymous.callTool({ name: 'request_consultation', arguments: consultation(1) })
    t.equal(refused.isError, true)
    t.same(challengeOf(refused), [`Bearer scope="write:leads", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp"`])
    t.equal(await app.leads.count(), 0)
    t.notOk((await anonymous.callTool({ name: 'show_playbook', arguments: {} })).isError, 'public tools stay public')

    const writer = await tokenFor(app, ['write:leads'], `${base}/mcp`)
    const client = await connect(t, base, writer.token)
    const filed = await client.callTool({ name: 'request_consultation', arguments: consultation(2) })
    t.notOk(filed.isError, textOf(filed))
    t.match(await leadsLog(t, l), [{ ...leadOf(2), client_id: writer.clientId }], 'stored under the client of the token')
  },
)

t.test('recent_leads: the newest leads first, since an instant, at most limit, in text and structured content', async (t) => {
  const l = await live(t)
  const { app, base } = l
  for (let i = 1; i <= 4; i++)
    await app.leads.submit({ ...leadOf(i), ...(i === 3 && { note: 'Villa in Mallorca' }) }, { clientId: null, owner: 'test' })
  const log = (await leadsLog(t, l)) as { id: string; received_at: string }[]
  const client = await connect(t, base, await mcpToken(l, ['read:leads']))

  const all = await client.callTool({ name: 'recent_leads', arguments: {} })
  t.same(all.structuredContent, { leads: [...log].reverse() }, 'every lead, newest first')
  t.match(textOf(all), /^The 4 latest leads received, newest first\. .*untrusted data/)
  t.same(
    textOf(all)
      .split('\n')
      .slice(1)
      .map((line) => JSON.parse(line)),
    [...log].reverse(),
    'then one lead per line, as JSON',
  )
  t.match(textOf(all), /"note":"Villa in Mallorca"/)

  const two = await client.callTool({ name: 'recent_leads', arguments: { limit: 2 } })
  t.same(two.structuredContent, { leads: [log[3], log[2]] }, 'limit')
  const since = log[2]?.received_at as string
  const after = await client.callTool({ name: 'recent_leads', arguments: { since } })
  t.same(
    (after.structuredContent as { leads: { received_at: string }[] }).leads.map((x) => x.received_at),
    log
      .filter((x) => x.received_at >= since)
      .map((x) => x.received_at)
      .reverse(),
    'since: received at or after',
  )
  const none = await client.callTool({ name: 'recent_leads', arguments: { since: '2999-01-01T00:00:00+02:00' } })
  t.same(none.structuredContent, { leads: [] })
  t.match(textOf(none), /^No leads received since 2999-01-01T00:00:00\+02:00\.$/)

  for (const [args, hint] of [
    [{ limit: 0 }, /`limit` must be a whole number from 1 to 100/],
    [{ limit: 101 }, /`limit` must be a whole number from 1 to 100/],
    [{ since: 'yesterday' }, /`since` must be an RFC 3339 date-time/],
    [{ page: 2 }, /remove `page`; accepted arguments are `since`, `limit`/],
  ] as const) {
    const r = await client.callTool({ name: 'recent_leads', arguments: args })
    t.equal(r.isError, true, `${JSON.stringify(args)}: refused`)
    t.match(textOf(r), hint)
  }
})

for (const [mode, who] of [
  ['legacy', 'anonymous'],
  ['auto', 'anonymous'],
  ['legacy', 'token'],
  ['auto', 'token'],
] as const) {
  t.test(
    `${mode} era, ${who === 'token' ? 'with a token' : 'no credentials'}: resources, tools and every tool call through the MCP client`,
    async (t) => {
      const l = await live(t)
      const { app, config, base } = l
      // Tokens still work on /mcp: one for it (RFC 8707), with the scope request_consultation checks.
      const writer = who === 'token' ? await tokenFor(app, ['read:projects', 'write:leads'], `${base}/mcp`) : undefined
      const client = await connect(t, base, writer?.token ?? null, mode)
      t.match(client.getNegotiatedProtocolVersion(), mode === 'auto' ? /^2026-/ : /^2025-/, `${mode}: the era the client negotiated`)
      const playbookUri = `ui://${config.publicHost}/playbook`
      const estimatorUri = `ui://${config.publicHost}/pricing-estimator`
      const ui = { csp: { resourceDomains: [base] }, prefersBorder: true }

      // Resources: the two app views.
      const { resources } = await client.listResources()
      t.same(resources.map((r) => [r.uri, r.mimeType]).sort(), [
        [playbookUri, 'text/html;profile=mcp-app'],
        [estimatorUri, 'text/html;profile=mcp-app'],
      ])
      for (const r of resources) t.same(r._meta?.ui, ui, `${r.uri}: listing _meta.ui`)
      const views = loadViews(config)
      for (const uri of [playbookUri, estimatorUri]) {
        const read = await client.readResource({ uri })
        t.equal(read.contents.length, 1)
        const content = read.contents[0] as { uri: string; mimeType?: string; text?: string; _meta?: Structured }
        t.equal(content.uri, uri)
        t.equal(content.mimeType, 'text/html;profile=mcp-app')
        t.match(content.text, /<html/i, `${uri}: HTML`)
        t.equal(content.text, views.find((v) => v.uri === uri)?.html, `${uri}: the built file, as read at start-up`)
        t.same(content._meta?.ui, ui, `${uri}: content _meta.ui (csp, prefersBorder)`)
      }

      // Tools.
      const { tools } = await client.listTools()
      t.same(tools.map((tool) => tool.name).sort(), ALL_TOOLS)
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      t.equal((byName.get('show_playbook')?._meta?.ui as Structured | undefined)?.resourceUri, playbookUri)
      t.equal((byName.get('show_pricing_estimator')?._meta?.ui as Structured | undefined)?.resourceUri, estimatorUri)
      t.same(
        (byName.get('estimate_price')?._meta?.ui as Structured | undefined)?.visibility,
        ['model', 'app'],
        'the estimator view calls estimate_price',
      )
      t.same(
        (byName.get('request_consultation')?._meta?.ui as Structured | undefined)?.visibility,
        ['model', 'app'],
        'the playbook view calls request_consultation',
      )
      t.equal(byName.get('show_playbook')?.annotations?.readOnlyHint, true)
      t.equal(byName.get('request_consultation')?.annotations?.readOnlyHint, false)
      t.match(byName.get('estimate_price')?.inputSchema, {
        type: 'object',
        properties: { area_sqm: { type: 'number' } },
        required: ['area_sqm'],
      })

      // show_playbook: exactly the documented structure.
      const playbook = loadPlaybookFrom(spec)
      const projects = app.catalogue.current()?.projects ?? []
      const shown = await client.callTool({ name: 'show_playbook', arguments: {} })
      t.notOk(shown.isError)
      const sc = shown.structuredContent as Structured
      t.same(Object.keys(sc).sort(), ['filter', 'phases', 'studio', 'styles'])
      t.same(sc.studio, playbook.studio)
      t.same(sc.phases, playbook.phases)
      t.same(sc.filter, { style: null, location: null })
      const styles = sc.styles as { name: string; description: string; palette: string[]; projects: Structured[] }[]
      t.same(
        styles.map((s) => s.name),
        playbook.styles.map((s) => s.name),
      )
      for (const s of styles) {
        t.same(Object.keys(s).sort(), ['description', 'name', 'palette', 'projects'])
        t.ok(s.projects.length > 0 && s.projects.length <= OVERVIEW_PROJECTS_PER_STYLE, `${s.name}: signature projects (overview)`)
        for (const p of s.projects) {
          const source = projects.find((x) => x.id === p.id)
          t.ok(source?.styles.includes(s.name), `${p.id} is a ${s.name} project`)
          t.same(p, {
            id: source?.id,
            title: source?.title,
            designer: source?.designer,
            city: source?.location.city,
            country: source?.location.country,
            year: source?.year,
            area_sqm: source?.area_sqm,
            image: source?.images[0] ? { url: source.images[0].url, alt: source.images[0].alt } : null,
            page_url: `${base}/projects/${source?.id}`,
          })
        }
      }
      const firstImage = styles[0]?.projects[0]?.image as { url: string } | null
      t.match(firstImage?.url, new RegExp(`^${base}/images/`), 'images are served by the API (the origin in the views’ CSP)')
      t.match(textOf(shown), /Atelier Lumen/, 'text for hosts without UI')
      t.match(textOf(shown), /Concept/)

      // Filters: style (case-insensitive) and location (city or country, name or code).
      const filtered = await client.callTool({ name: 'show_playbook', arguments: { style: 'wabi-sabi', location: 'japan' } })
      const fsc = filtered.structuredContent as { styles: { name: string; projects: { country: string }[] }[]; filter: Structured }
      t.same(fsc.filter, { style: 'Wabi-Sabi', location: 'japan' })
      t.same(
        fsc.styles.map((s) => s.name),
        ['Wabi-Sabi'],
      )
      t.ok(fsc.styles[0] && fsc.styles[0].projects.length > 0 && fsc.styles[0].projects.every((p) => p.country === 'JP'))
      const lisbon = await client.callTool({ name: 'show_playbook', arguments: { location: 'LISBON' } })
      const lsc = lisbon.structuredContent as { styles: { projects: { city: string }[] }[] }
      const inLisbon = lsc.styles.flatMap((s) => s.projects)
      t.ok(inLisbon.length > 0 && inLisbon.every((p) => p.city === 'Lisbon'))
      const unknownStyle = await client.callTool({ name: 'show_playbook', arguments: { style: 'Baroque' } })
      t.equal(unknownStyle.isError, true)
      t.match(textOf(unknownStyle), /Japandi/, 'the hint lists the styles')

      // show_pricing_estimator: {input, estimate, options}, area defaulting to 120.
      // Expected figures from the shipped model, priced outside the app.
      const pricing = new Pricing(spec, loadPricingModel(spec))
      const est = await client.callTool({ name: 'show_pricing_estimator', arguments: { style: 'japandi', city: 'Lisbon' } })
      t.notOk(est.isError)
      const expected = pricing.estimate({ area_sqm: 120, style: 'japandi', city: 'Lisbon' })
      t.same(est.structuredContent, { input: expected.input, estimate: expected, options: pricing.options })
      t.match(textOf(est), /€/)
      const estErr = await client.callTool({ name: 'show_pricing_estimator', arguments: { city: 'Atlantis' } })
      t.equal(estErr.isError, true)
      t.match(textOf(estErr), /city must be one of/)

      // estimate_price: the Estimate; EstimateError → tool error with message and hint.
      const price = await client.callTool({
        name: 'estimate_price',
        arguments: { area_sqm: 85, rooms: 3, service_level: 'Turnkey', city: 'London' },
      })
      t.notOk(price.isError)
      t.same(price.structuredContent, pricing.estimate({ area_sqm: 85, rooms: 3, service_level: 'Turnkey', city: 'London' }))
      t.match(textOf(price), /Indicative budget for 85 m², 3 rooms, Turnkey, London/)
      for (const [args, hint] of [
        [{ area_sqm: 5 }, /area_sqm must be a number between 10 and 10000/],
        [{ area_sqm: 80, rooms: 2.5 }, /rooms must be a whole number/],
        [{ area_sqm: 80, service_level: 'platinum' }, /service_level must be one of: consultation, design, full-service, turnkey/],
        [{ area_sqm: 80, style: 'Brutalist' }, /style must be one of/],
      ] as const) {
        const r = await client.callTool({ name: 'estimate_price', arguments: args })
        t.equal(r.isError, true, `${JSON.stringify(args)}: tool error`)
        t.match(textOf(r), /^Invalid \w+: .* Hint: /, `${JSON.stringify(args)}: message and hint`)
        t.match(textOf(r), hint)
      }
      const missingArea = await client.callTool({ name: 'estimate_price', arguments: {} })
      t.equal(missingArea.isError, true, 'schema violations are tool errors too')

      // list_projects: Project records, filtered.
      const all = await client.callTool({ name: 'list_projects', arguments: {} })
      t.same(all.structuredContent, { projects })
      t.match(textOf(all), new RegExp(`^${projects.length} of ${projects.length} published projects`))
      const some = await client.callTool({ name: 'list_projects', arguments: { style: 'industrial loft', country: 'us' } })
      const someProjects = (some.structuredContent as { projects: typeof projects }).projects
      t.ok(someProjects.length > 0)
      t.ok(someProjects.every((p) => p.styles.includes('Industrial Loft') && p.location.country === 'US'))
      t.same(
        someProjects,
        projects.filter((p) => p.styles.includes('Industrial Loft') && p.location.country === 'US'),
      )
      const kyoto = await client.callTool({ name: 'list_projects', arguments: { city: 'kyoto' } })
      t.ok((kyoto.structuredContent as { projects: typeof projects }).projects.every((p) => p.location.city === 'Kyoto'))
      const none = await client.callTool({ name: 'list_projects', arguments: { city: 'Reykjavik' } })
      t.same(none.structuredContent, { projects: [] })
      t.match(textOf(none), /Places: .*Kyoto \(Japan\)/)

      // request_consultation: stored through the same intake, visible in GET /leads.json with its
      // note (the note was not stored before LeadFields had one).
      const lead = { name: '  Grace Hopper ', email: 'grace@example.com', phone: '+1 (202) 555-0147' }
      const consult = await client.callTool({
        name: 'request_consultation',
        arguments: { ...lead, note: ' A loft in Brooklyn ', consent: true },
      })
      t.notOk(consult.isError)
      const receipt = consult.structuredContent as { id: string; received_at: string; status: string }
      t.same(Object.keys(receipt).sort(), ['id', 'received_at', 'status'])
      t.equal(receipt.status, 'received')
      t.match(receipt.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      t.match(textOf(consult), new RegExp(receipt.id))
      t.match(textOf(consult), /note was passed on/)
      t.same(await leadsLog(t, l), [
        {
          id: receipt.id,
          name: 'Grace Hopper',
          email: lead.email,
          phone: lead.phone,
          note: 'A loft in Brooklyn',
          received_at: receipt.received_at,
          client_id: writer?.clientId ?? null,
          source: 'agent',
          consented_at: receipt.received_at,
        },
      ])
    },
  )
}

t.test('request_consultation refuses bad input with the HTTP hints and stores nothing', async (t) => {
  const l = await live(t)
  const { app, base } = l
  const client = await connect(t, base, await mcpToken(l, ['write:leads']))
  const good = consultation(7)
  const { consent: _consent, ...withoutConsent } = good
  const cases: [string, Structured, RegExp][] = [
    ['no consent', withoutConsent, /Invalid consent: .*is missing the argument `consent`.*`consent` must be true/],
    ['consent false', { ...good, consent: false }, /Invalid consent: .*`consent` must be true: ask the person/],
    ['consent "yes"', { ...good, consent: 'yes' }, /`consent` must be true/],
    ['overlong note', { ...good, note: 'n'.repeat(2001) }, /`note` must be text of at most 2000 characters/],
    [
      'unknown argument',
      { ...good, budget: 'EUR 2m' },
      /remove `budget`; accepted arguments are `name`, `email`, `phone`, `note`, `consent`/,
    ],
    ['not an email', { ...good, email: 'grace-at-example.com' }, /`email` must be an email address/],
    ['phone with letters', { ...good, phone: 'call me maybe' }, /`phone` must be at most 40 characters with at least 6 digits/],
    ['phone with 5 digits', { ...good, phone: '12-34-5' }, /at least 6 digits/],
    ['blank name', { ...good, name: '   ' }, /`name` must be 1–200 characters/],
    ['overlong name', { ...good, name: 'A'.repeat(201) }, /`name` must be 1–200/],
    ['overlong email', { ...good, email: `${'a'.repeat(250)}@example.com` }, /`email`/],
    ['missing phone', { name: good.name, email: good.email }, /phone/],
    ['phone is a number', { ...good, phone: 2079460958 }, /phone/],
  ]
  for (const [name, args, hint] of cases) {
    const r = await client.callTool({ name: 'request_consultation', arguments: args })
    t.equal(r.isError, true, `${name}: tool error`)
    t.match(textOf(r), hint, `${name}: says what to change`)
    t.equal(await app.leads.count(), 0, `${name}: nothing stored`)
  }
  const ok = await client.callTool({ name: 'request_consultation', arguments: { ...good, note: '   ' } })
  t.notOk(ok.isError)
  t.equal(await app.leads.count(), 1, 'the same lead, well-formed, is stored')
  t.same(
    Object.keys((await leadsLog(t, l))[0] ?? {}).sort(),
    ['client_id', 'consented_at', 'email', 'id', 'name', 'phone', 'received_at', 'source'],
    'a blank note is not stored',
  )
})

t.test('/mcp has its own rate limit, keyed by client (or address without a token)', async (t) => {
  const l = await live(t, { rateLimits: { mcp: { max: 3, window: '1 minute' } } })
  const { base } = l
  const a = { token: await mcpToken(l, ['read:projects']) }
  const b = { token: await mcpToken(l, ['read:projects']) }
  const post = (token: string) =>
    fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, authorization: `Bearer ${token}` }, body: JSON.stringify(initialize) })
  const first = await post(a.token)
  t.equal(first.status, 200)
  t.equal(first.headers.get('x-ratelimit-limit'), '3')
  await post(a.token)
  await post(a.token)
  const spent = await post(a.token)
  t.equal(spent.status, 429)
  t.ok(spent.headers.get('retry-after'))
  t.equal(((await spent.json()) as Structured).code, 'rate_limited')
  t.equal((await post(b.token)).status, 200, 'another client has its own budget')
  // Without a token the budget is the address's, spent by every anonymous caller from it.
  const anonymous = () => fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: JSON.stringify(initialize) })
  t.same(
    [(await anonymous()).status, (await anonymous()).status, (await anonymous()).status, (await anonymous()).status],
    [200, 200, 200, 429],
  )
})

t.test('project pages: the page_url of the playbook cards', async (t) => {
  const { app, base } = await live(t)
  const project = app.catalogue.current()?.projects[0]
  if (!project) throw new Error('no catalogue')
  const res = await fetch(`${base}/projects/${project.id}`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/html/)
  t.match(res.headers.get('content-security-policy'), /default-src 'none'/)
  const html = await res.text()
  t.match(html, `<h1>${project.title}</h1>`)
  t.match(html, `src="${project.images[0]?.url}"`)
  t.match(html, project.designer)
  const missing = await call(t, app, { url: '/projects/no-such-project' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().code, 'not_found')
  const script = await call(t, app, { url: `/projects/${encodeURIComponent('<script>alert(1)</script>')}` })
  t.equal(script.statusCode, 404)
  t.notMatch(script.body, '<script>')
})

t.test('start-up fails with what to do when the views are not built', async (t) => {
  const { config } = await testApp(t)
  const empty = mkdtempSync(join(tmpdir(), 'no-views-'))
  t.teardown(() => rmSync(empty, { recursive: true, force: true }))
  t.throws(() => loadViews(config, empty), /no-views-\w+\/playbook\.html is missing: run `npm run build:ui`/)
})

t.test('logs never hold lead details, tool arguments or tokens', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const l = await live(t, {}, { logger: { level: 'trace', stream } })
  const { base } = l
  const token = await mcpToken(l, ['write:leads', 'read:leads'])
  const client = await connect(t, base, token)
  const anonymous = await connect(t, base, null)
  const lead = { name: 'Hedy Lamarr', email: 'hedy.secret@example.com', phone: '+43 1 555 0199', consent: true }
  await client.callTool({ name: 'request_consultation', arguments: { ...lead, note: 'frequency-hopping atelier' } })
  await anonymous.callTool({ name: 'request_consultation', arguments: { ...lead, note: 'torpedo-guidance loft' } })
  await client.callTool({ name: 'request_consultation', arguments: { ...lead, email: 'broken-address-xyz' } })
  await client.callTool({ name: 'recent_leads', arguments: {} })
  await client.callTool({ name: 'show_playbook', arguments: { location: 'secret-place-xyz' } })
  await fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, authorization: 'Bearer forged.token.value' }, body: '{}' })
  await client.close()
  await anonymous.close()
  const all = lines.join('')
  t.ok(all.includes('"path":"/mcp"'), 'requests are logged')
  for (const secret of [
    lead.name,
    lead.email,
    lead.phone,
    'frequency-hopping',
    'torpedo-guidance',
    'broken-address-xyz',
    'secret-place-xyz',
    token,
    'forged.token.value',
  ]) {
    t.notOk(all.includes(secret), `no ${secret.slice(0, 12)}… in the logs`)
  }
})
