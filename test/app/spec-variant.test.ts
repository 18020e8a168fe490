// Shapes flow from the spec: an app built on a variant of the spec whose LeadFields have one more
// optional field validates it, stores it, returns it in the leads log, accepts it from the MCP
// tool request_consultation, sends it in lead.received events and counts it in the idempotency
// hash, with no code change (and no migration: a lead's fields are stored as one document).
import t from 'tap'
import { type OpenApiDocument, Spec } from '../../plugins/spec/document.js'
import { call, leadOf, spec as shipped, testApp, tokenFor } from '../helpers/app.js'
import { connect, live, textOf } from '../helpers/mcp.js'
import { receiver } from '../helpers/receiver.js'
import { endpointAt } from '../helpers/webhooks.js'

const SUBMIT = '/scripts/enquiry_backend.php'
const FIELD = 'preferred_time'

/** The shipped spec with one more optional lead field. */
function variant(): Spec {
  const doc: OpenApiDocument = structuredClone(shipped.document)
  const fields = doc.components.schemas.LeadFields as { properties: Record<string, unknown>; required: string[] }
  fields.properties[FIELD] = {
    type: 'string',
    maxLength: 40,
    description: 'When the prospect prefers to be called.',
    'x-hint': '`preferred_time` must be at most 40 characters, such as "weekday mornings"',
  }
  return new Spec(doc)
}

const post = (token: string, payload: object, key?: string) => ({
  method: 'POST' as const,
  url: SUBMIT,
  headers: { authorization: `Bearer ${token}`, ...(key && { 'idempotency-key': key }) },
  payload,
})

t.test('the shipped spec refuses the field: the variant is what makes the difference', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const res = await call(t, app, post(token, { ...leadOf(1), [FIELD]: 'mornings' }))
  t.equal(res.statusCode, 400)
  t.match(res.json().message, new RegExp(`unknown field \`${FIELD}\``))
})

t.test('a new optional Lead field is validated, stored, returned and hashed', async (t) => {
  const { app } = await testApp(t, {}, { spec: variant() })
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])

  // Validated with the variant's constraints and hint.
  const tooLong = await call(t, app, post(token, { ...leadOf(1), [FIELD]: 'x'.repeat(41) }))
  t.equal(tooLong.statusCode, 400)
  t.match(tooLong.json().hint, /`preferred_time` must be at most 40 characters/)
  const notText = await call(t, app, post(token, { ...leadOf(1), [FIELD]: 9 }))
  t.equal(notText.statusCode, 400)
  t.match(notText.json().hint, /`preferred_time` must be a string/)
  // Still optional; other unknown fields are still refused, naming the new field among the accepted.
  t.equal((await call(t, app, post(token, leadOf(2)))).statusCode, 200, 'the field stays optional')
  const unknown = await call(t, app, post(token, { ...leadOf(3), colour: 'blue' }))
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json().hint, new RegExp(`\`${FIELD}\``), 'the accepted fields include the new one')

  // Stored and returned by getLeads (trimmed, like every text field).
  const ok = await call(t, app, post(token, { ...leadOf(4), [FIELD]: '  weekday mornings ' }))
  t.equal(ok.statusCode, 200)
  const log = await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${token}` } })
  const entry = (log.json() as Record<string, unknown>[]).find((e) => e.id === ok.json().id)
  t.equal(entry?.[FIELD], 'weekday mornings', 'the log shows the new field')
  t.equal((log.json() as Record<string, unknown>[]).find((e) => e.id !== ok.json().id)?.[FIELD], undefined, 'absent where not given')

  // Part of the idempotency hash: the same key with only the new field changed is a conflict.
  const first = await call(t, app, post(token, { ...leadOf(5), [FIELD]: 'evenings' }, 'variant-key'))
  t.equal(first.statusCode, 200)
  const same = await call(t, app, post(token, { ...leadOf(5), [FIELD]: 'evenings' }, 'variant-key'))
  t.same(same.json(), first.json(), 'the same body replays the first receipt')
  const changed = await call(t, app, post(token, { ...leadOf(5), [FIELD]: 'mornings' }, 'variant-key'))
  t.equal(changed.statusCode, 409, 'a different value of the new field is a different lead')
  t.equal(changed.json().code, 'idempotency_conflict')
})

t.test('request_consultation accepts the new field, derived from the same spec', async (t) => {
  const { app, base } = await live(t, {}, { spec: variant() })
  const writer = await tokenFor(app, ['write:leads'], `${base}/mcp`)
  const reader = await tokenFor(app, ['read:leads'])
  const client = await connect(t, base, writer.token)
  const { tools } = await client.listTools()
  const schema = tools.find((tool) => tool.name === 'request_consultation')?.inputSchema as { properties?: Record<string, unknown> }
  t.ok(schema.properties?.[FIELD], 'the tool advertises the new field')
  t.match(schema.properties?.[FIELD], { type: 'string', maxLength: 40 }, 'with its constraints')

  const refused = await client.callTool({
    name: 'request_consultation',
    arguments: { ...leadOf(6), consent: true, [FIELD]: 'y'.repeat(41) },
  })
  t.equal(refused.isError, true)
  t.match(textOf(refused), /`preferred_time` must be at most 40 characters/)

  const done = await client.callTool({ name: 'request_consultation', arguments: { ...leadOf(7), consent: true, [FIELD]: 'after 6pm' } })
  t.notOk(done.isError, textOf(done))
  const receipt = done.structuredContent as { id: string }
  const log = await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${reader.token}` } })
  t.equal((log.json() as Record<string, unknown>[]).find((e) => e.id === receipt.id)?.[FIELD], 'after 6pm')
})

t.test('lead.received events carry the new field', async (t) => {
  const { app } = await testApp(t, { webhooksAllowPrivate: true }, { spec: variant() })
  const rx = await receiver(t)
  await endpointAt(app, rx)
  const { token } = await tokenFor(app, ['write:leads'])
  const ok = await call(t, app, post(token, { ...leadOf(6), [FIELD]: ' after 6 pm ' }))
  t.equal(ok.statusCode, 200)
  await rx.waitFor((d) => d.length === 1)
  t.equal(rx.deliveries[0]?.event.data.id, ok.json().id)
  t.equal(rx.deliveries[0]?.event.data[FIELD], 'after 6 pm', 'the event data is the log entry, new field included')
  t.same(rx.deliveries[0]?.verifiedBy, [0])
})
