// A name made only of what cleaning removes (C1 controls, U+061C, format characters...) passed
// the spec's pattern, was cleaned to nothing and stored without a name, on the API and through
// request_consultation; GET /leads.json then broke the spec's LeadLogEntry (issue 36). Now such a
// field is refused with 400 naming it (the tool's error likewise) and nothing is stored; an
// optional note cleaned to nothing is not stored. On the suite's storage (SQLite, or PostgreSQL).
import t from 'tap'
import { call, leadOf, tokenFor } from '../helpers/app.js'
import { connect, live, mcpToken, textOf } from '../helpers/mcp.js'

const SUBMIT = '/scripts/enquiry_backend.php'

/** Names that are nothing once cleaned: each passed the spec's pattern before, some still do (beyond U+FFFF). */
const NAMELESS = [
  '\u0085',
  '\u061C',
  ' \u0081 ',
  '\u0001',
  '\u009F\u0080',
  '\u200B\u200C',
  '\u2066\u2069',
  '\u00AD',
  '\u180E',
  '\uFEFF',
  '\u3164',
  '\uFFA0',
  '\u2062',
  '\uFFF9',
  '\u{E0041}\u{E0042}',
  '\u{1D173}',
  '\u{E0001} \u0085 \u{110BD}',
]

t.test('API: a name that is nothing once cleaned is refused, naming `name`; the log stays valid', async (t) => {
  const l = await live(t)
  const { app } = l
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  for (const name of NAMELESS) {
    const res = await call(t, app, { method: 'POST', url: SUBMIT, headers: auth, payload: { ...leadOf(1), name } })
    t.equal(res.statusCode, 400, `${JSON.stringify(name)}: 400`)
    t.equal(res.json().code, 'invalid_request')
    t.match(res.json().message, /`name`/, `${JSON.stringify(name)}: the field is named`)
    t.match(res.json().hint, /`name` must be/, `${JSON.stringify(name)}: the hint says what a name must be`)
  }
  t.equal(await app.leads.count(), 0, 'nothing stored')

  // Siblings: a note of nothing but removed characters is a blank optional field: not stored.
  const res = await call(t, app, { method: 'POST', url: SUBMIT, headers: auth, payload: { ...leadOf(2), note: '\u0085\u061C \u200B' } })
  t.equal(res.statusCode, 200, 'a note of invisible characters: the lead is stored')
  const log = await call(t, app, { url: '/leads.json', headers: auth })
  t.equal(log.statusCode, 200, 'the log matches LeadLogEntry (call() checks it against the spec)')
  t.same(
    log.json()[0],
    { ...leadOf(2), id: res.json().id, received_at: res.json().received_at, client_id: log.json()[0].client_id, source: 'api' },
    'without a note',
  )
})

t.test('request_consultation: the same names are refused with a tool error naming `name`; nothing stored', async (t) => {
  const l = await live(t)
  const agent = await connect(t, l.base, await mcpToken(l, ['write:leads']))
  for (const name of NAMELESS) {
    const result = await agent.callTool({ name: 'request_consultation', arguments: { ...leadOf(3), name, consent: true } })
    t.equal(result.isError, true, `${JSON.stringify(name)}: a tool error`)
    t.match(textOf(result), /`?name`?/, `${JSON.stringify(name)}: names the field`)
  }
  t.equal(await l.app.leads.count(), 0, 'nothing stored')
  const anonymous = await connect(t, l.base, null)
  const refused = await anonymous.callTool({ name: 'request_consultation', arguments: { ...leadOf(4), name: '\u0085', consent: true } })
  t.equal(refused.isError, true, 'anonymously too')
  t.equal(await l.app.leads.count(), 0)
})
