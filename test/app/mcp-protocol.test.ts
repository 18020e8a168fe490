// /mcp against the letter of JSON-RPC 2.0 and the MCP specification, as the MCP conformance suite
// checks it: the transport's error codes (raw HTTP, since the SDK client never sends malformed
// input), each also the API's Error; the capabilities the server advertises (only what a
// stateless server without a GET stream can do); resource-not-found per protocol revision; and
// every tool's advertised inputSchema against what the tool accepts, with the real MCP client.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import t, { type Test } from 'tap'
import { connect, type Live, live, mcpToken, textOf } from '../helpers/mcp.js'

type Json = Record<string, unknown>

const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const initialize = (protocolVersion = '2025-06-18') => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
})

/** POST /mcp with a raw body; the answer as JSON (an SSE answer's one `data:` line). */
async function post(
  base: string,
  body: string | Blob,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Json; text: string }> {
  const res = await fetch(`${base}/mcp`, { method: 'POST', headers: { ...mcpHeaders, ...headers }, body })
  const text = await res.text()
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? text
  return { status: res.status, body: data ? (JSON.parse(data) as Json) : {}, text }
}

/** An HTTP error of /mcp: the API's Error and a JSON-RPC error response, in one body. */
function isBoth(t: Test, body: Json, code: string, rpcCode: number, label: string): void {
  t.equal(body.code, code, `${label}: Error code ${code}`)
  t.type(body.message, 'string', `${label}: Error message`)
  t.type(body.hint, 'string', `${label}: a hint`)
  t.equal(body.jsonrpc, '2.0', `${label}: JSON-RPC response`)
  t.match(body.error, { code: rpcCode, message: String(body.message) }, `${label}: JSON-RPC code ${rpcCode}`)
  t.ok('id' in body, `${label}: with an id`)
}

t.test('transport errors: JSON-RPC 2.0 codes, each also the Error shape', async (t) => {
  const { base, app } = await live(t)

  // -32700 Parse error: no JSON was received.
  for (const [label, body] of [
    ['malformed JSON', '{"jsonrpc": "2.0", "id": 1, "method": '],
    ['a trailing comma', '{"jsonrpc": "2.0", "id": 1, "method": "tools/list",}'],
  ] as const) {
    const res = await post(base, body)
    t.equal(res.status, 400, `${label}: 400`)
    isBoth(t, res.body, 'invalid_request', -32700, label)
    t.equal(res.body.id, null, `${label}: id null (none could be read)`)
  }
  // A body that is not UTF-8 (JSON's one encoding) is not read as JSON either: Latin-1's é.
  const latin1 = await post(
    base,
    new Blob([Buffer.from('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "Ren\xe9e"}}', 'latin1')]),
  )
  t.equal(latin1.status, 400, 'Latin-1 bytes: 400')
  isBoth(t, latin1.body, 'invalid_request', -32700, 'Latin-1 bytes')
  t.match(latin1.body.message, /not valid UTF-8/, 'Latin-1 bytes: says the body is not UTF-8')
  const lone = await post(base, '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x\\ud800"}}')
  t.equal(lone.status, 400, 'a lone surrogate: 400')
  isBoth(t, lone.body, 'invalid_request', -32700, 'a lone surrogate')
  t.match(lone.body.message, /`params.name` holds a lone surrogate/, 'a lone surrogate: names where it is')
  const empty = await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders })
  isBoth(t, (await empty.json()) as Json, 'invalid_request', -32700, 'no body')

  // -32600 Invalid Request: JSON, but not one request object.
  for (const [label, body, id] of [
    ['a number', '42', null],
    ['an empty object', '{}', null],
    ['jsonrpc 1.0', '{"jsonrpc": "1.0", "id": 7, "method": "tools/list"}', 7],
    ['a method that is not a string', '{"jsonrpc": "2.0", "id": 8, "method": 5}', null],
  ] as const) {
    const res = await post(base, body)
    t.equal(res.status, 400, `${label}: 400`)
    isBoth(t, res.body, 'invalid_request', -32600, label)
    t.equal(res.body.id, id, `${label}: id ${id}`)
  }

  // A batch: refused whole (MCP 2025-06-18 removed batching), nothing in it is done.
  const consult = (n: number) => ({
    jsonrpc: '2.0',
    id: n,
    method: 'tools/call',
    params: {
      name: 'request_consultation',
      arguments: { name: `Batch ${n}`, email: `b${n}@example.com`, phone: '+44 20 7946 0000', consent: true },
    },
  })
  for (const batch of [[consult(1), consult(2)], [consult(3)], []]) {
    const res = await post(base, JSON.stringify(batch))
    t.equal(res.status, 400, `a batch of ${batch.length}: 400`)
    isBoth(t, res.body, 'invalid_request', -32600, `a batch of ${batch.length}`)
    t.equal(res.body.id, null)
    t.match(res.body.message, /batch/)
  }
  t.equal(await app.leads.count(), 0, 'no call of a batch was run')

  // 406 without an Accept that lists both media types (Streamable HTTP): the documented body.
  for (const accept of ['application/json', 'text/event-stream', '*/*']) {
    const res = await post(base, JSON.stringify(initialize()), { accept })
    t.equal(res.status, 406, `Accept: ${accept}: 406`)
    isBoth(t, res.body, 'not_acceptable', -32000, `Accept: ${accept}`)
    t.match(res.body.hint, /Accept: application\/json, text\/event-stream/)
  }

  // A protocol version this server does not serve: 400, saying which it does.
  const old = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/list' }), { 'mcp-protocol-version': '1999-01-01' })
  t.equal(old.status, 400)
  isBoth(t, old.body, 'invalid_request', -32000, 'an unknown MCP-Protocol-Version')
  t.match(old.body.hint, /protocol version/)
  // The same in the 2026-07-28 form (the version in the request's _meta): its own code and data.
  const future = await post(
    base,
    JSON.stringify({
      jsonrpc: '2.0',
      id: 11,
      method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01', 'io.modelcontextprotocol/clientCapabilities': {} } },
    }),
    { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' },
  )
  t.equal(future.status, 400)
  isBoth(t, future.body, 'invalid_request', -32022, 'an unsupported 2026-era protocol version')
  t.equal(future.body.id, 11, 'with the id of the request')
  t.match(future.body.error, { data: { requested: '2099-01-01', supported: ['2026-07-28'] } }, 'and the versions served')

  // Sizes, content types and other methods: the API's refusals, also JSON-RPC errors.
  const huge = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 12, method: 'tools/list', params: { pad: 'x'.repeat(70_000) } }))
  t.equal(huge.status, 413)
  isBoth(t, huge.body, 'payload_too_large', -32000, 'a body over the limit')
  const text = await post(base, 'hello', { 'content-type': 'text/plain' })
  t.equal(text.status, 415)
  isBoth(t, text.body, 'unsupported_media_type', -32000, 'a text/plain body')
  for (const method of ['GET', 'DELETE', 'PUT', 'PATCH']) {
    const res = await fetch(`${base}/mcp`, { method, headers: { accept: 'application/json, text/event-stream' } })
    t.equal(res.status, 405, `${method}: 405`)
    t.equal(res.headers.get('allow'), 'POST', `${method}: Allow: POST`)
    isBoth(t, (await res.json()) as Json, 'method_not_allowed', -32000, method)
  }

  // Inside a served exchange: method not found, invalid params (JSON-RPC responses, HTTP 200).
  const unknownMethod = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'no/such/method' }))
  t.equal(unknownMethod.status, 200)
  t.match(unknownMethod.body, { jsonrpc: '2.0', id: 4, error: { code: -32601 } }, 'method not found: -32601')
  const badParams = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 42 } }))
  t.match(badParams.body, { jsonrpc: '2.0', id: 5, error: { code: -32602 } }, 'invalid params: -32602')
  const unknownTool = await post(
    base,
    JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'nope', arguments: {} } }),
  )
  t.match(unknownTool.body, { jsonrpc: '2.0', id: 6, error: { code: -32602 } }, 'unknown tool: -32602')
})

t.test('initialize: versions without batching, and only the capabilities a stateless server has', async (t) => {
  const { base } = await live(t)
  // A client asking for a revision that had JSON-RPC batches is offered one without.
  for (const asked of ['2025-03-26', '2024-11-05']) {
    const res = await post(base, JSON.stringify(initialize(asked)))
    t.equal(res.status, 200)
    const offered = String((res.body.result as Json).protocolVersion)
    t.ok(offered >= '2025-06-18', `asked ${asked}, offered ${offered}`)
  }
  for (const asked of ['2025-06-18', '2025-11-25']) {
    const res = await post(base, JSON.stringify(initialize(asked)))
    t.equal((res.body.result as Json).protocolVersion, asked, `${asked} is served as asked`)
  }

  // Nothing can ever be pushed (no GET stream, no session, lists fixed at start-up): no listChanged.
  for (const mode of ['legacy', 'auto'] as const) {
    const client = await connect(t, base, null, mode)
    const caps = client.getServerCapabilities()
    t.ok(caps?.tools, `${mode}: tools`)
    t.ok(caps?.resources, `${mode}: resources`)
    t.not(caps?.tools?.listChanged, true, `${mode}: tools.listChanged not advertised`)
    t.not(caps?.resources?.listChanged, true, `${mode}: resources.listChanged not advertised`)
    t.not(caps?.resources?.subscribe, true, `${mode}: no resource subscriptions`)
  }
})

/** The real MCP client, with every JSON-RPC answer it receives kept (the client rewrites codes it reads). */
async function recordingClient(t: Test, base: string, mode: 'legacy' | 'auto'): Promise<{ client: Client; wire: Json[] }> {
  const wire: Json[] = []
  const client = new Client({ name: 'recording', version: '1.0.0' }, { versionNegotiation: { mode } })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    fetch: async (input, init) => {
      const res = await fetch(input, init)
      if (init?.method === 'POST' && res.ok) {
        const text = await res.clone().text()
        if (res.headers.get('content-type')?.startsWith('application/json')) wire.push(JSON.parse(text) as Json)
        else for (const m of text.matchAll(/^data: (.*)$/gm)) wire.push(JSON.parse(m[1] as string) as Json)
      }
      return res
    },
  })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, wire }
}

t.test('resources/read of an unknown URI: resource not found, in the code of the revision in use', async (t) => {
  const { base, config } = await live(t)
  const uri = `ui://${config.publicHost}/no-such-view`
  // 2025-06-18 and 2025-11-25 say -32002; 2026-07-28 says -32602 (SEP-2164). Both with data.uri.
  for (const [mode, code] of [
    ['legacy', -32002],
    ['auto', -32602],
  ] as const) {
    const { client, wire } = await recordingClient(t, base, mode)
    const era = client.getNegotiatedProtocolVersion()
    const refused = await client.readResource({ uri }).then(
      () => undefined,
      (err: unknown) => err,
    )
    t.match(refused, { data: { uri } }, `${era}: the client reads it as resource not found`)
    const answer = wire.find((m) => 'error' in m)
    t.match(answer, { error: { code, data: { uri } } }, `${era}: ${code} on the wire, with the URI`)
    // A view that exists is still read.
    const read = await client.readResource({ uri: `ui://${config.publicHost}/playbook` })
    t.match((read.contents[0] as { text?: string }).text, /<html/i, `${era}: a view is read`)
  }
  // Raw, without the client: the same for a 2025-era request.
  const raw = await post(base, JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 'file:///etc/passwd' } }))
  t.match(raw.body, { id: 9, error: { code: -32002, data: { uri: 'file:///etc/passwd' } } })
})

/**
 * Every tool's advertised inputSchema says what the tool accepts: an independent JSON Schema
 * validator (as a host that checks arguments has) never refuses arguments the tool accepts.
 */
t.test('each tool accepts exactly what its advertised inputSchema lets a host send', async (t) => {
  const l: Live = await live(t)
  const client = await connect(t, l.base, await mcpToken(l, ['read:leads', 'write:leads']))
  const { tools } = await client.listTools()
  const host = new Ajv2020({ strict: false, allErrors: true })
  ;(addFormats as unknown as (a: Ajv2020) => void)(host)
  const schemaOf = new Map(tools.map((tool) => [tool.name, host.compile(tool.inputSchema)]))

  const cases: Record<string, Json[]> = {
    estimate_price: [
      { area_sqm: 90 },
      { area_sqm: 90, style: 'japandi', city: 'lisbon' },
      { area_sqm: 90, style: 'JAPANDI', city: 'NEW YORK', service_level: 'TURNKEY' },
      { area_sqm: 90, style: 'mid century modern', city: 'deia', service_level: 'Full Service' },
      { area_sqm: 90, style: 'Wabi Sabi', city: 'Deià', service_level: 'full service' },
      { area_sqm: 90, rooms: null, style: null, city: null, service_level: null },
      { area_sqm: 90, style: 'Brutalist' },
      { area_sqm: 90, city: 'Atlantis' },
      { area_sqm: 5 },
      { area_sqm: '90' },
      { area_sqm: 90, rooms: 2.5 },
      { area_sqm: 90, budget: 'high' },
      {},
    ],
    show_pricing_estimator: [
      {},
      { area_sqm: null, style: 'scandinavian minimalism' },
      { city: 'copenhagen', service_level: 'design' },
      { style: 'Baroque' },
      { area_sqm: 20000 },
    ],
    list_projects: [
      {},
      { style: 'industrial loft', country: 'us' },
      { city: 'KYOTO' },
      { city: 'Reykjavik' },
      { style: null },
      { page: 2 },
    ],
    show_playbook: [{}, { style: 'wabi sabi', location: 'japan' }, { style: 'Baroque' }, { location: 'x'.repeat(101) }],
    recent_leads: [{}, { limit: 5 }, { since: '2026-01-01T00:00:00Z' }, { limit: 0 }, { since: 'yesterday' }],
    request_consultation: [
      { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0958', consent: true },
      { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0958', note: 'A flat', consent: true },
      { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0958' },
      { name: 'Ada Lovelace', email: 'not-an-email', phone: '+44 20 7946 0958', consent: true },
    ],
  }
  t.same(Object.keys(cases).sort(), tools.map((tool) => tool.name).sort(), 'every tool is checked')
  for (const [name, list] of Object.entries(cases)) {
    const validate = schemaOf.get(name)
    if (!validate) throw new Error(`no tool ${name}`)
    for (const args of list) {
      const result = await client.callTool({ name, arguments: args })
      const accepted = result.isError !== true
      const valid = validate(args)
      const label = `${name}(${JSON.stringify(args).slice(0, 80)})`
      if (accepted) t.ok(valid, `${label}: accepted by the tool, so by its schema`)
      else if (!valid) t.pass(`${label}: refused by both`)
      // Refused by the tool although the schema allows it: only a name none of the studio's.
      else t.match(textOf(result), /must be one of|no signature style/, `${label}: refused with the names it takes`)
    }
  }
  // The names that estimate_price takes are in its schema for hosts and models to read.
  const estimate = tools.find((tool) => tool.name === 'estimate_price')?.inputSchema as { properties: Record<string, Json> }
  t.ok((estimate.properties.style?.examples as string[] | undefined)?.includes('Japandi'), 'style: the names as examples')
  t.match(String(estimate.properties.city?.description), /Lisbon.*case, accents/)
})
