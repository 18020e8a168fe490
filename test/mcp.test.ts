// The MCP endpoint end to end, with the real MCP client over Streamable HTTP against the app
// listening on a port: resources (the two app views), tools (every one called), the lead path
// shared with HTTP, the OAuth resource-server behaviour (401 / 403 challenges, RFC 9728 metadata),
// the project pages, and what reaches the logs.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { Client, ClientCredentialsProvider, InsufficientScopeError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import type { BuildOptions } from '../app.js'
import type { Config } from '../config.js'
import { estimatePrice, loadPricingModel, pricingOptions } from '../handlers/pricing/estimate.js'
import { loadPlaybook, OVERVIEW_PROJECTS_PER_STYLE } from '../handlers/tools/playbook.js'
import { loadViews } from '../plugins/mcp/views.js'
import { call, leadOf, newClient, testApp, tokenFor } from './helpers/app.js'
import { freePort } from './helpers/processes.js'

type Mode = 'legacy' | 'auto'
type Structured = Record<string, unknown>

interface Live {
  app: FastifyInstance
  config: Config
  base: string
}

/** The app on a real port, its public base URL pointing at it. */
async function live(t: Test, overrides: Partial<Config> = {}, options: BuildOptions = {}): Promise<Live> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app, config } = await testApp(t, { port, publicBaseUrl: base, ...overrides }, options)
  await app.listen({ host: '127.0.0.1', port })
  return { app, config, base }
}

async function connect(t: Test, base: string, token: string, mode: Mode = 'legacy'): Promise<Client> {
  const client = new Client({ name: 'studio-api-test', version: '1.0.0' }, { versionNegotiation: { mode } })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    authProvider: { token: async () => token },
    onInsufficientScope: 'throw',
  })
  await client.connect(transport)
  t.teardown(() => client.close())
  return client
}

const textOf = (result: { content?: unknown }): string =>
  ((result.content ?? []) as { type: string; text?: string }[])
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n')

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}
const toolCall = (name: string, args: object, id = 2) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

t.test('RFC 9728 protected-resource metadata of /mcp', async (t) => {
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
  // The authorization server it names publishes its metadata, whose token endpoint issues the tokens /mcp accepts.
  const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Structured
  t.equal(as.issuer, base)
  t.equal(as.token_endpoint, `${base}/api/token`)
})

// The discovery itself works (401 → resource_metadata → authorization server metadata); the SDK then
// refuses our RFC 8414 document, which has no `response_types_supported` (REQUIRED by RFC 8414) and
// no `authorization_endpoint` (the SDK's schema requires one even for client_credentials-only servers).
const AS_METADATA_GAP =
  'the authorization-server metadata lacks response_types_supported / authorization_endpoint, which the MCP client SDK requires'

t.test(
  'an OAuth client discovers the authorization server from the 401 and gets in (client_credentials)',
  { todo: AS_METADATA_GAP },
  async (t) => {
    const { app, base } = await live(t)
    const creds = await newClient(app, ['read:projects'])
    const provider = new ClientCredentialsProvider({
      clientId: creds.client_id,
      clientSecret: creds.client_secret,
      expectedIssuer: base,
      scope: 'read:projects',
    })
    const client = new Client({ name: 'm2m', version: '1.0.0' })
    t.teardown(() => client.close())
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }))
    const listed = await client.callTool({ name: 'list_projects', arguments: { city: 'Paris' } })
    t.notOk(listed.isError)
    t.ok((listed.structuredContent as { projects: unknown[] }).projects.length > 0)
  },
)

t.test('a body that is not JSON (or no body) is refused before it is read, like any operation body', async (t) => {
  const { app } = await live(t)
  const { token } = await tokenFor(app, ['read:projects'])
  const auth = { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' }
  const text = await app.inject({ method: 'POST', url: '/mcp', headers: { ...auth, 'content-type': 'text/plain' }, payload: 'hello' })
  t.equal(text.statusCode, 415)
  t.equal(text.json().code, 'unsupported_media_type')
  t.match(text.json().hint, /application\/json/)
  const empty = await app.inject({ method: 'POST', url: '/mcp', headers: auth })
  t.equal(empty.statusCode, 400)
  t.equal(empty.json().code, 'invalid_request')
  t.match(empty.json().hint, /application\/json/)
})

t.test('without a valid token /mcp answers 401 with the resource-metadata challenge and the Error body', async (t) => {
  const { app, base } = await live(t)
  const metadata = `${base}/.well-known/oauth-protected-resource/mcp`

  const none = await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: JSON.stringify(initialize) })
  t.equal(none.status, 401)
  t.equal(none.headers.get('www-authenticate'), `Bearer resource_metadata="${metadata}"`)
  t.match(none.headers.get('x-ratelimit-limit'), /^\d+$/, 'rate-limit headers on the 401 too')
  t.equal(none.headers.get('x-api-version'), '1.3.0')
  const body = (await none.json()) as Structured
  t.equal(body.code, 'unauthorized')
  t.match(body.hint, /Authorization: Bearer/)

  for (const authorization of ['Bearer not-a-jwt', 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.c2ln', 'Bearer ']) {
    const bad = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, authorization }, body: JSON.stringify(initialize) })
    t.equal(bad.status, 401, `${authorization}: 401`)
    const challenge = bad.headers.get('www-authenticate') ?? ''
    t.match(
      challenge,
      /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="([^"]+)"$/,
      `${authorization}: challenge`,
    )
    t.ok(challenge.endsWith(`resource_metadata="${metadata}"`))
    t.equal(((await bad.json()) as Structured).code, 'unauthorized')
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

  // The SDK client without credentials cannot connect.
  const client = new Client({ name: 'anonymous', version: '1.0.0' })
  await t.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`))))

  // Only POST: GET (no SSE stream on a stateless endpoint) and DELETE are 405 with Allow.
  const get = await call(t, app, { method: 'GET', url: '/mcp' })
  t.equal(get.statusCode, 405)
  t.equal(get.headers.allow, 'POST')
})

t.test('a tool call the token lacks the scope for is refused with the insufficient_scope challenge (403)', async (t) => {
  const { app, base } = await live(t)
  const metadata = `${base}/.well-known/oauth-protected-resource/mcp`
  const { token } = await tokenFor(app, ['read:leads'])
  const auth = { ...mcpHeaders, authorization: `Bearer ${token}` }

  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: auth, body: JSON.stringify(toolCall('list_projects', {})) })
  t.equal(res.status, 403)
  t.match(
    res.headers.get('www-authenticate'),
    /^Bearer error="insufficient_scope", error_description="[^"]+", scope="read:projects", resource_metadata="([^"]+)"$/,
  )
  t.ok(res.headers.get('www-authenticate')?.endsWith(`resource_metadata="${metadata}"`))
  const body = (await res.json()) as Structured
  t.equal(body.code, 'insufficient_scope')
  t.match(body.hint, /read:projects/)

  // A batch is checked message by message: the union of the missing scopes is challenged.
  const batch = [toolCall('show_playbook', {}, 1), toolCall('list_projects', {}, 2), toolCall('request_consultation', leadOf(1), 3)]
  const batched = await fetch(`${base}/mcp`, { method: 'POST', headers: auth, body: JSON.stringify(batch) })
  t.equal(batched.status, 403)
  t.match(batched.headers.get('www-authenticate'), /scope="read:projects write:leads"/)
  t.equal(await app.store.leads.count(), 0, 'nothing of a refused batch ran')

  // Through the real client: connecting and listing work with any valid token; the call is challenged.
  for (const mode of ['legacy', 'auto'] as const) {
    const client = await connect(t, base, token, mode)
    t.ok(
      (await client.listTools()).tools.some((tool) => tool.name === 'list_projects'),
      `${mode}: listed`,
    )
    const err = await client.callTool({ name: 'list_projects', arguments: {} }).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(err instanceof InsufficientScopeError, `${mode}: InsufficientScopeError`)
    t.equal((err as InsufficientScopeError).requiredScope, 'read:projects')
    t.equal((err as InsufficientScopeError).resourceMetadataUrl?.href, metadata)
    const consult = await client.callTool({ name: 'request_consultation', arguments: leadOf(1) }).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.equal((consult as InsufficientScopeError).requiredScope, 'write:leads', `${mode}: request_consultation needs write:leads`)
    // Tools without a scope of their own work with this token.
    const shown = await client.callTool({ name: 'estimate_price', arguments: { area_sqm: 80 } })
    t.notOk(shown.isError)
  }
  t.equal(await app.store.leads.count(), 0)
})

for (const mode of ['legacy', 'auto'] as const) {
  t.test(`${mode} era: resources, tools and every tool call through the MCP client`, async (t) => {
    const { app, config, base } = await live(t)
    const { token } = await tokenFor(app, ['read:projects', 'write:leads'])
    const client = await connect(t, base, token, mode)
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
    t.same(tools.map((tool) => tool.name).sort(), [
      'estimate_price',
      'list_projects',
      'request_consultation',
      'show_playbook',
      'show_pricing_estimator',
    ])
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
    const playbook = loadPlaybook()
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
    const model = loadPricingModel()
    const est = await client.callTool({ name: 'show_pricing_estimator', arguments: { style: 'japandi', city: 'Lisbon' } })
    t.notOk(est.isError)
    const expected = estimatePrice(model, { area_sqm: 120, style: 'japandi', city: 'Lisbon' })
    t.same(est.structuredContent, { input: expected.input, estimate: expected, options: pricingOptions(model) })
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
    t.same(price.structuredContent, estimatePrice(model, { area_sqm: 85, rooms: 3, service_level: 'Turnkey', city: 'London' }))
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

    // request_consultation: stored through the same intake, visible in GET /leads.json.
    const lead = { name: '  Grace Hopper ', email: 'grace@example.com', phone: '+1 (202) 555-0147' }
    const consult = await client.callTool({ name: 'request_consultation', arguments: { ...lead, note: 'A loft in Brooklyn' } })
    t.notOk(consult.isError)
    const receipt = consult.structuredContent as { id: string; received_at: string; status: string }
    t.same(Object.keys(receipt).sort(), ['id', 'received_at', 'status'])
    t.equal(receipt.status, 'received')
    t.match(receipt.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    t.match(textOf(consult), new RegExp(receipt.id))
    t.match(textOf(consult), /note was not stored/)
    const reader = await tokenFor(app, ['read:leads'])
    const log = await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${reader.token}` } })
    const clientId = (await app.store.leads.count()) === 1 ? (log.json() as { client_id: string }[])[0]?.client_id : undefined
    t.same(log.json(), [
      { id: receipt.id, name: 'Grace Hopper', email: lead.email, phone: lead.phone, received_at: receipt.received_at, client_id: clientId },
    ])
    t.ok(clientId, 'the lead names the client of the token')
  })
}

t.test('request_consultation refuses bad input with the HTTP hints and stores nothing', async (t) => {
  const { app, base } = await live(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const client = await connect(t, base, token)
  const good = leadOf(7)
  const cases: [string, Structured, RegExp][] = [
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
    t.equal(await app.store.leads.count(), 0, `${name}: nothing stored`)
  }
  const ok = await client.callTool({ name: 'request_consultation', arguments: good })
  t.notOk(ok.isError)
  t.equal(await app.store.leads.count(), 1, 'the same lead, well-formed, is stored')
})

t.test('/mcp has its own rate limit, keyed by client', async (t) => {
  const { app, base } = await live(t, { rateLimits: { mcp: { max: 3, window: '1 minute' } } })
  const a = await tokenFor(app, ['read:projects'])
  const b = await tokenFor(app, ['read:projects'])
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
  const { app, base } = await live(t, {}, { logger: { level: 'trace', stream } })
  const { token } = await tokenFor(app, ['write:leads', 'read:projects'])
  const client = await connect(t, base, token)
  const lead = { name: 'Hedy Lamarr', email: 'hedy.secret@example.com', phone: '+43 1 555 0199' }
  await client.callTool({ name: 'request_consultation', arguments: { ...lead, note: 'frequency-hopping atelier' } })
  await client.callTool({ name: 'request_consultation', arguments: { ...lead, email: 'broken-address-xyz' } })
  await client.callTool({ name: 'show_playbook', arguments: { location: 'secret-place-xyz' } })
  await fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, authorization: 'Bearer forged.token.value' }, body: '{}' })
  await client.close()
  const all = lines.join('')
  t.ok(all.includes('"path":"/mcp"'), 'requests are logged')
  for (const secret of [
    lead.name,
    lead.email,
    lead.phone,
    'frequency-hopping',
    'broken-address-xyz',
    'secret-place-xyz',
    token,
    'forged.token.value',
  ]) {
    t.notOk(all.includes(secret), `no ${secret.slice(0, 12)}… in the logs`)
  }
})
