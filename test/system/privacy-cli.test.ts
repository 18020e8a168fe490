// Personal data (features/privacy, scripts/leads.ts), on the suite's storage (SQLite, or PostgreSQL
// + Redis): access and erasure requests through the CLI while the app runs and delivers to a real
// receiver; purge and retention, and the cut-off's edge; the outbox's payload retention.
// The bytes left in the SQLite files and kill -9 during an erasure: privacy-files.test.ts.

import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'
import { type Run, run } from '../helpers/cli.js'
import { connect, live, mcpToken } from '../helpers/mcp.js'
import { type Delivery, receiver } from '../helpers/receiver.js'
import { leadAt, storeAt } from '../helpers/stored-leads.js'
import { endpointAt, until } from '../helpers/webhooks.js'

const SUBMIT = '/scripts/enquiry_backend.php'

const ok = (t: Test, r: Run, what: string) => t.equal(r.code, 0, `${what}: ${r.stderr}`)
const ofType = (type: string) => (d: Delivery[]) => d.filter((x) => x.event.type === type)

const noRetentionOfItsOwn = { leadsRetentionDays: 0, webhookPayloadRetentionDays: 3650 }
const ids = async (app: FastifyInstance) => (await app.leads.page(0, 1000)).map((r) => r.entry.id)

t.test('access and erasure of an address: API, form, agent; copies, downstream, others untouched', async (t) => {
  const l = await live(t, { leadsAllowAnonymous: true, webhooksAllowPrivate: true })
  const { app, config } = l
  const rx = await receiver(t)
  const endpoint = await endpointAt(app, rx)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const person = { name: 'Erin Person', email: 'Erin.Person@example.com', phone: '+33 6 12 34 56 78' }

  // From the API (with an Idempotency-Key), the website form (anonymous, consent), the agent tool.
  const api = await call(t, app, { method: 'POST', url: SUBMIT, headers: { ...auth, 'idempotency-key': 'erin-1' }, payload: person })
  t.equal(api.statusCode, 200)
  const form = await call(t, app, { method: 'POST', url: SUBMIT, payload: { ...person, email: 'erin.person@EXAMPLE.com', consent: true } })
  t.equal(form.statusCode, 200)
  const agent = await (await connect(t, l.base, null)).callTool({
    name: 'request_consultation',
    arguments: { ...person, note: 'A house in Deià', consent: true },
  })
  t.notOk(agent.isError)
  const agentId = (agent.structuredContent as { id: string }).id
  const other = await call(t, app, { method: 'POST', url: SUBMIT, headers: auth, payload: leadOf(9) })
  const erinIds = [api.json().id, form.json().id, agentId]
  await rx.waitFor((d) => ofType('lead.received')(d).length === 4)

  // Access: all three, with how they came, consent, and their deliveries.
  const exported = await run('leads', ['export', '--email', 'ERIN.person@example.com'], config)
  ok(t, exported, 'export')
  const report = JSON.parse(exported.stdout)
  t.same(
    report.leads.map((x: { id: string }) => x.id),
    erinIds,
    'the three leads of the address, matched whatever the case, oldest first',
  )
  t.match(report.leads, [
    { source: 'api', consented_at: null, client_id: String, name: 'Erin Person', phone: person.phone },
    { source: 'form', consented_at: form.json().received_at, client_id: null },
    { source: 'agent', consented_at: String, note: 'A house in Deià' },
  ])
  for (const lead of report.leads)
    t.match(lead.deliveries, [
      { endpoint_id: endpoint.id, endpoint_url: `${rx.url}/hook`, event_type: 'lead.received', status: 'delivered', attempts: 1 },
    ])
  t.same(report.erased, [], 'nothing erased yet')

  // Erasure.
  const erased = await run('leads', ['erase', '--email', 'erin.person@example.com'], config)
  ok(t, erased, 'erase')
  t.match(erased.stdout, /^erased: 3$/m)
  const log = (await call(t, app, { url: '/leads.json', headers: auth })).json()
  t.same(
    log.map((x: { id: string }) => x.id),
    [other.json().id],
    'the leads log no longer shows them; the other address is untouched',
  )
  const reader = await connect(t, l.base, await mcpToken(l, ['read:leads']))
  const recent = (await reader.callTool({ name: 'recent_leads', arguments: {} })).structuredContent as { leads: { id: string }[] }
  t.same(
    recent.leads.map((x) => x.id),
    [other.json().id],
    'recent_leads no longer shows them',
  )
  const after = JSON.parse((await run('leads', ['export', '--email', 'erin.person@example.com'], config)).stdout)
  t.same(after.leads, [], 'export shows no lead')
  t.same(after.erased.map((e: { lead_id: string }) => e.lead_id).sort(), [...erinIds].sort())
  t.match(after.erased, [
    { reason: 'request', erased_at: String },
    { reason: 'request', erased_at: String },
    { reason: 'request', erased_at: String },
  ])
  t.notMatch(JSON.stringify(after.erased), /erin|\+33/i, 'the erasure record holds none of the data')

  // Downstream: three signed lead.erased events, nothing personal in them.
  await rx.waitFor((d) => ofType('lead.erased')(d).length === 3)
  const events = ofType('lead.erased')(rx.deliveries)
  t.same(events.map((e) => e.event.data.id).sort(), [...erinIds].sort())
  for (const e of events) {
    t.same(e.verifiedBy, [0], 'signed with the endpoint secret')
    t.ok(e.valid, 'the body matches the spec (LeadErasedEvent)')
    t.match(e.event.data, { reason: 'request', erased_at: String })
    t.notMatch(e.body, /erin|Person|\+33|12 34 56/i, 'no personal data in it')
  }

  // No copy left in storage: outbox events and deliveries, idempotency records.
  const db = app.store.db
  const leftEvents = await db.selectFrom('webhook_events').select(['type', 'lead_id']).where('lead_id', 'in', erinIds).execute()
  t.same(
    leftEvents.map((e) => e.type),
    ['lead.erased', 'lead.erased', 'lead.erased'],
    'only the erasure events remain',
  )
  const payloads = await db.selectFrom('webhook_events').select('payload').execute()
  t.notOk(
    payloads.some((p) => /erin/i.test(p.payload)),
    'no outbox payload holds the address',
  )
  const keys = await db.selectFrom('idempotency_keys').selectAll().where('key', '=', 'erin-1').execute()
  t.same(keys, [], 'the idempotency record is gone')
  await until('the other lead delivered', async () => (await db.selectFrom('webhook_deliveries').select('status').execute()).length === 4)
  t.ok(
    await db.selectFrom('webhook_events').select('id').where('lead_id', '=', other.json().id).executeTakeFirst(),
    'the other lead keeps its event',
  )

  // A retry with the same Idempotency-Key after the erasure never brings the erased lead back:
  // the key is gone with it, so the retry is a new submission (a new lead, a new id).
  const retry = await call(t, app, { method: 'POST', url: SUBMIT, headers: { ...auth, 'idempotency-key': 'erin-1' }, payload: person })
  t.equal(retry.statusCode, 200)
  t.not(retry.json().id, api.json().id, 'not the erased receipt')
  t.notOk(erinIds.includes(retry.json().id))

  // Erasing by id, and an id that is not there.
  const byId = await run('leads', ['erase', '--id', retry.json().id], config)
  t.match(byId.stdout, /^erased: 1$/m)
  const none = await run('leads', ['erase', '--id', retry.json().id], config)
  t.match(none.stdout, /^erased: 0$/m, 'an erased lead is not erased twice')
  const usage = await run('leads', ['erase'], config)
  t.equal(usage.code, 64)
  t.match(usage.stderr, /--email ADDRESS or --id LEAD_ID/)
})

t.test('purge --before: leads received strictly before the cut-off are erased, the one at it is kept', async (t) => {
  const { app, config } = await testApp(t, noRetentionOfItsOwn)
  const cut = '2025-06-01T00:00:00.000Z'
  const at = (ms: number) => new Date(Date.parse(cut) + ms).toISOString()
  await storeAt(app.store, [leadAt('old', at(-1)), leadAt('edge', at(0)), leadAt('new', at(1))])
  const purged = await run('leads', ['purge', '--before', '2025-06-01T02:00:00+02:00', '--yes'], config)
  ok(t, purged, 'purge')
  t.match(purged.stdout, /^erased: 1$/m)
  t.same(await ids(app), ['edge', 'new'], 'the lead received exactly at the cut-off is kept')
  const [erasure] = await app.store.db.selectFrom('lead_erasures').selectAll().execute()
  t.match(erasure, { lead_id: 'old', reason: 'retention' })
  const bad = await run('leads', ['purge', '--before', 'last tuesday'], config)
  t.equal(bad.code, 64)
  t.match(bad.stderr, /RFC 3339/)
})

t.test('a reader paging the log goes on after a lead erased since it read it', async (t) => {
  const { app, config } = await testApp(t, noRetentionOfItsOwn)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const stored: string[] = []
  for (let n = 1; n <= 5; n++) {
    const res = await call(t, app, { method: 'POST', url: SUBMIT, headers: auth, payload: leadOf(n) })
    t.equal(res.statusCode, 200)
    stored.push(res.json().id)
  }
  const page = async (url: string) => {
    const res = await call(t, app, { url, headers: auth })
    t.equal(res.statusCode, 200, `${url}: ${res.body}`)
    const next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link ?? ''))?.[1]
    return { ids: (res.json() as { id: string }[]).map((x) => x.id), next: next && new URL(next).pathname + new URL(next).search }
  }
  const first = await page('/leads.json?limit=2')
  t.same(first.ids, stored.slice(0, 2))
  t.ok(first.next, 'a next link after the first page')

  // The lead the reader's cursor names is erased (at a person's request), and the one after it.
  ok(t, await run('leads', ['erase', '--id', stored[1] as string], config), 'erase the cursor lead')
  ok(t, await run('leads', ['erase', '--id', stored[2] as string], config), 'erase the next one')
  const second = await page(first.next as string)
  t.same(second.ids, stored.slice(3), 'the reader goes on where it was: nothing skipped, nothing repeated')
  t.same((await page(`/leads.json?after=${stored[2]}`)).ids, stored.slice(3), 'the whole log after an erased lead, streamed')

  const never = await call(t, app, { url: '/leads.json?limit=2&after=0190c0de-0000-7000-8000-000000000000', headers: auth })
  t.equal(never.statusCode, 400, 'an id that was never in the log is still refused')
  t.match(never.json(), { code: 'invalid_request', hint: /id of the last lead of the previous page/ })
  t.notOk(
    JSON.stringify(await app.store.db.selectFrom('lead_erasures').selectAll().execute()).includes(leadOf(2).email),
    'the erasure record keeps the place, not the person',
  )
})
