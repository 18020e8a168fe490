// Deep JSON (third audit, finding 6): thousands of nested arrays or objects, with or without a
// lone surrogate escape at the bottom, on every JSON route (submitLead, /mcp as the body and
// inside a tool argument) are refused with 400 saying what is wrong, never a 500 with a stack
// trace in the log; a lone surrogate within the depth limit is still named by its path.
import t from 'tap'
import { MAX_DEPTH } from '../../plugins/validation/json-body.js'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'
import { captureLog } from '../helpers/log.js'

const SUBMIT = '/scripts/enquiry_backend.php'
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

const arrays = (depth: number, inner: string) => `${'['.repeat(depth)}${inner}${']'.repeat(depth)}`
const objects = (depth: number, inner: string) => `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`
const lead = (field: string, json: string) => {
  const { name, email, phone } = leadOf(1)
  const fields: Record<string, string> = { name: JSON.stringify(name), email: JSON.stringify(email), phone: JSON.stringify(phone) }
  fields[field] = json
  return `{${Object.entries(fields)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',')}}`
}
const toolCall = (args: string) => `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"estimate_price","arguments":${args}}}`

t.test('deep JSON with or without a lone surrogate: 400 naming the depth, on every JSON route, no stack in the log', async (t) => {
  const log = captureLog()
  const { app } = await testApp(t, { logLevel: 'info' }, { logger: { level: 'info', stream: log.stream } })
  const { token } = await tokenFor(app, ['write:leads'])
  const auth = { authorization: `Bearer ${token}` }

  const cases: [string, string, string][] = [
    ['8,000 arrays around "\\ud800" as the name', SUBMIT, lead('name', arrays(8000, '"\\ud800"'))],
    ['7,000 arrays around "\\ud800" as the note', SUBMIT, lead('note', arrays(7000, '"\\ud800"'))],
    ['2,500 objects around "\\udfff" as the note', SUBMIT, lead('note', objects(2500, '"\\udfff"'))],
    ['8,100 arrays as the body', SUBMIT, arrays(8100, '1')],
    ['30,000 arrays around "\\ud800" as the MCP body', '/mcp', arrays(30_000, '"\\ud800"')],
    ['30,000 arrays around "\\ud800" in a tool argument', '/mcp', toolCall(`{"brief":${arrays(30_000, '"\\ud800"')}}`)],
    ['10,000 objects in a tool argument', '/mcp', toolCall(`{"brief":${objects(10_000, '1')}}`)],
    [`${MAX_DEPTH + 1} levels`, SUBMIT, lead('note', arrays(MAX_DEPTH, '"x"'))],
  ]
  for (const [label, url, payload] of cases) {
    const headers = url === SUBMIT ? { ...auth, 'content-type': 'application/json' } : MCP_HEADERS
    const res = await call(t, app, { method: 'POST', url, headers, payload })
    t.equal(res.statusCode, 400, `${label}: 400`)
    t.equal(res.json().code, 'invalid_request', `${label}: invalid_request`)
    t.match(res.json().message, new RegExp(`more than ${MAX_DEPTH} levels deep`), `${label}: says the body nests too deep`)
    if (url === '/mcp') t.match(res.json().error, { code: -32700 }, `${label}: JSON-RPC parse error`)
  }
  t.equal(await app.leads.count(), 0, 'nothing stored')

  // Within the limit, a lone surrogate is still found, and named by where it is.
  const shallow = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { ...auth, 'content-type': 'application/json' },
    payload: lead('note', arrays(MAX_DEPTH - 2, '"\\ud800"')),
  })
  t.equal(shallow.statusCode, 400)
  t.match(shallow.json().message, /`note(\[0\]){126}` holds a lone surrogate/, 'the lone surrogate is named by its path')
  const fine = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { ...auth, 'content-type': 'application/json' },
    payload: lead('note', '"a pair \\ud83c\\udfdb"'),
  })
  t.equal(fine.statusCode, 200, 'a surrogate pair is a character: stored')

  const lines = log.lines()
  t.same(
    lines.filter((l) => l.level >= 50),
    [],
    'no error logged',
  )
  t.notOk(log.raw.join('').includes('Maximum call stack'), 'no stack overflow anywhere in the log')
  t.notOk(
    lines.some((l) => JSON.stringify(l).includes('"stack"')),
    'no stack trace in the log',
  )
})
