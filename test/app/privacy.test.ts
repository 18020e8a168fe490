// Personal data (features/privacy, scripts/leads.ts), on the suite's storage (SQLite, or PostgreSQL
// + Redis): access and erasure requests through the CLI while the app runs and delivers to a real
// receiver; purge and retention, and the cut-off's edge; the outbox's payload retention.
// The bytes left in the SQLite files and kill -9 during an erasure: privacy-files.test.ts.

import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildApp } from '../../app.js'
import { cutoffOf, Privacy } from '../../features/privacy/privacy.js'
import { loadPepper } from '../../plugins/auth/secrets.js'
import { testApp } from '../helpers/app.js'
import { captureLog } from '../helpers/log.js'
import { leadAt, storeAt } from '../helpers/stored-leads.js'
import { until } from '../helpers/webhooks.js'

const DAY = 24 * 60 * 60 * 1000

const ids = async (app: FastifyInstance) => (await app.leads.page(0, 1000)).map((r) => r.entry.id)

// The app's own retention check runs at start, on the real clock, without holding the start-up:
// where a test stores leads and events dated on a clock of its own, that check must find nothing
// to do, or it races the test's own (it deleted one of the payload test's events once, on PostgreSQL).
const noRetentionOfItsOwn = { leadsRetentionDays: 0, webhookPayloadRetentionDays: 3650 }

t.test('retention: at start and on the hourly check, leads past LEADS_RETENTION_DAYS are erased as erase does', async (t) => {
  // The app that stores the leads keeps them (its own check at start, which does not hold the
  // start-up, once erased the expired lead before the second start could: on PostgreSQL in CI, the
  // second's first line then said erased: 0).
  const { app, config } = await testApp(t, noRetentionOfItsOwn)
  const now = Date.now()
  await storeAt(app.store, [
    leadAt('expired', new Date(now - 30 * DAY - 60_000).toISOString()),
    leadAt('kept', new Date(now - 29 * DAY).toISOString()),
  ])
  await app.close()

  // A new start over the same storage, with a retention of 30 days, checks at once.
  const log = captureLog()
  const second = await buildApp(
    { ...config, leadsRetentionDays: 30 },
    { retentionEveryMs: 200, logger: { level: 'info', stream: log.stream } },
  )
  t.teardown(() => second.close())
  await second.ready()
  await until('erased at start', async () => !(await ids(second)).includes('expired'))
  t.same(await ids(second), ['kept'])
  const erased = await second.store.db.selectFrom('webhook_events').select(['type', 'lead_id']).where('lead_id', '=', 'expired').execute()
  t.same(erased, [{ type: 'lead.erased', lead_id: 'expired' }], 'its lead.received is gone, its lead.erased written')
  t.match(await second.store.db.selectFrom('lead_erasures').selectAll().execute(), [{ lead_id: 'expired', reason: 'retention' }])

  // The periodic check (shortened here) erases what expires while the server runs, nothing else.
  await storeAt(second.store, [leadAt('later', new Date(Date.now() - 31 * DAY).toISOString())])
  await until('erased by the periodic check', async () => !(await ids(second)).includes('later'))
  t.same(await ids(second), ['kept'])
  // The line follows the check's end (after the files are cleared).
  const retentionLines = () => log.lines().filter((l) => l.msg === 'retention applied')
  await until('two retention lines', async () => retentionLines().length >= 2)
  const retention = retentionLines()
  t.ok(retention.length >= 2, 'each check that erased something says how many')
  t.match(retention[0], { erased: 1 })
  t.notMatch(log.raw.join(''), /@example\.com|Prospect|\+44/, 'no personal data in the log')
})

t.test('retention: the cut-off edge, 0 keeps forever, two instances at once erase each lead once', async (t) => {
  const { app, config } = await testApp(t, noRetentionOfItsOwn)
  const now = new Date('2027-03-01T12:00:00.000Z')
  const edge = cutoffOf(now, 730)
  t.equal(edge, '2025-03-01T12:00:00.000Z', '730 days before')
  const before = (ms: number) => new Date(Date.parse(edge) - ms).toISOString()
  await storeAt(app.store, [leadAt('older', before(1)), leadAt('at-edge', before(0)), leadAt('younger', before(-1))])
  const pepper = loadPepper(config)
  const forever = await new Privacy(app.store, pepper, () => now).applyRetention({ leadsDays: 0, payloadDays: 30 })
  t.equal(forever.erased, 0, 'LEADS_RETENTION_DAYS=0 keeps every lead')
  // Two instances checking together: the lead is erased, recorded and announced once.
  const [a, b] = await Promise.all([
    new Privacy(app.store, pepper, () => now).applyRetention({ leadsDays: 730, payloadDays: 30 }),
    new Privacy(app.store, pepper, () => now).applyRetention({ leadsDays: 730, payloadDays: 30 }),
  ])
  t.equal(a.erased + b.erased, 1, 'one lead erased, by one of them')
  t.same(await ids(app), ['at-edge', 'younger'], 'a lead exactly LEADS_RETENTION_DAYS old is kept; 1 ms older is erased')
  const announced = await app.store.db.selectFrom('webhook_events').select('lead_id').where('type', '=', 'lead.erased').execute()
  t.same(announced, [{ lead_id: 'older' }], 'one lead.erased')
})

t.test('payload retention: delivered and dead events go after WEBHOOK_PAYLOAD_RETENTION_DAYS, pending ones stay', async (t) => {
  const { app, config } = await testApp(t, noRetentionOfItsOwn)
  const db = app.store.db
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: 'we_1',
      url: 'https://crm.example/hook',
      events: 'lead.received lead.erased',
      secret: 'whsec_x',
      created_at: '2026-01-01T00:00:00.000Z',
    })
    .execute()
  const now = new Date('2026-06-01T00:00:00.000Z')
  const daysAgo = (d: number) => new Date(now.getTime() - d * DAY).toISOString()
  const names = ['delivered-old', 'dead-old', 'dead-recent-attempt', 'pending-old', 'delivered-new']
  await storeAt(
    app.store,
    names.map((n, i) => leadAt(n, daysAgo(i === 4 ? 5 : 40), i)),
  )
  const events = await db.selectFrom('webhook_events').select(['id', 'lead_id']).execute()
  const eventOf = (lead: string) => events.find((e) => e.lead_id === lead)?.id as string
  const set = (lead: string, status: 'delivered' | 'dead' | 'pending', lastAttempt: string) =>
    db.updateTable('webhook_deliveries').set({ status, last_attempt_at: lastAttempt }).where('event_id', '=', eventOf(lead)).execute()
  await set('delivered-old', 'delivered', daysAgo(40))
  await set('dead-old', 'dead', daysAgo(39))
  await set('dead-recent-attempt', 'dead', daysAgo(2))
  await set('pending-old', 'pending', daysAgo(1))
  await set('delivered-new', 'delivered', daysAgo(5))
  const privacy = new Privacy(app.store, loadPepper(config), () => now)
  const result = await privacy.applyRetention({ leadsDays: 730, payloadDays: 30 })
  t.equal(result.events, 2)
  const left = await db.selectFrom('webhook_events').select('lead_id').orderBy('seq').execute()
  t.same(
    left.map((e) => e.lead_id),
    ['dead-recent-attempt', 'pending-old', 'delivered-new'],
    'a pending event is never deleted; a dead letter stays 30 days after its last attempt',
  )
  const deliveries = await db.selectFrom('webhook_deliveries').select('event_id').execute()
  t.equal(deliveries.length, 3, 'the deleted events took their deliveries with them')
  t.equal((await ids(app)).length, 5, 'the leads themselves are kept (LEADS_RETENTION_DAYS)')
})
