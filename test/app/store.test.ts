import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import t, { type Test } from 'tap'
import { createConfig } from '../../config.js'
import { CatalogueRepository } from '../../features/catalogue/repository.js'
import { type LeadListener, LeadsRepository, type NewLead } from '../../features/leads/repository.js'
import { leadReceived } from '../../features/webhooks/events.js'
import { eventStatements, writeEvents } from '../../features/webhooks/outbox.js'
import { EMAIL_ENDPOINT_ID, WebhooksRepository } from '../../features/webhooks/repository.js'
import { ClientsRepository } from '../../plugins/auth/clients.js'
import { migrator } from '../../plugins/store/migrations.js'
import { connect, openStore, type Store } from '../../plugins/store/open.js'
import { StatementCache } from '../../plugins/store/watched.js'
import { freshSchemaUrl } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { EXPECTED_MIGRATIONS as MIGRATIONS } from '../helpers/migrations.js'
import { requirePart } from '../helpers/processes.js'

const PG_BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test'

async function pgReachable(): Promise<boolean> {
  const { default: pg } = await import('pg')
  const c = new pg.Client({ connectionString: PG_BASE, connectionTimeoutMillis: 2000 })
  try {
    await c.connect()
    await c.end()
    return true
  } catch {
    return false
  }
}

type StoreConfig = Parameters<typeof openStore>[0]

/** Each backend gives the configuration of a fresh store (undefined: not available here). */
const backends: { name: string; config: (t: Test) => Promise<StoreConfig | undefined> }[] = [
  {
    name: 'sqlite',
    config: async (t) => createConfig({ dataDir: testdir(t, {}) }),
  },
  {
    name: 'postgres',
    config: async (t) => {
      if (
        !requirePart(
          t,
          await pgReachable(),
          `PostgreSQL at ${new URL(PG_BASE).host}`,
          'start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
        )
      )
        return undefined
      return createConfig({ dataDir: testdir(t, {}), databaseUrl: await freshSchemaUrl(t, PG_BASE) })
    },
  },
]

/** The store is the connection; each feature's repository is built over it. */
const repositories = (store: Store) => ({
  clients: new ClientsRepository(store.db, store.dialect),
  leads: new LeadsRepository(store),
  catalogue: new CatalogueRepository(store.db, store.dialect),
  webhooks: new WebhooksRepository(store.db, store.dialect),
})

const at = (s: number) => new Date(Date.UTC(2026, 10, 22, 10, 0, s)).toISOString()
const lead = (id: string, s = 0, client: string | null = 'cl_a') => ({
  id,
  fields: { name: `Name ${id}`, email: `${id}@example.com`, phone: '+44 20 7946 0000' },
  received_at: at(s),
  client_id: client,
})

for (const backend of backends) {
  t.test(`store contract: ${backend.name}`, async (t) => {
    const config = await backend.config(t)
    if (!config) return
    const connection = await openStore(config)
    t.teardown(() => connection.close())
    t.equal(connection.dialect, backend.name)
    const store = Object.assign(repositories(connection), { db: connection.db, ping: () => connection.ping() })

    t.test('ping and migrations are idempotent: reopening migrates nothing and keeps the data', async (t) => {
      await store.ping()
      const migrated = await store.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute()
      t.same(
        migrated.map((r) => (r as { name: string }).name),
        MIGRATIONS,
        'the versioned migrations applied',
      )
      await store.clients.create({
        id: 'cl_keep',
        name: 'K',
        scopes: 'read:leads',
        secret_hash: '1'.repeat(64),
        secret_generation: 0,
        created_at: at(0),
        revoked_at: null,
      })
      const again = await openStore(config)
      t.teardown(() => again.close())
      await again.ping()
      const after = await again.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute()
      t.equal(after.length, MIGRATIONS.length, 'reopening applied no migration twice')
      t.match(await repositories(again).clients.find('cl_keep'), { name: 'K' }, 'reopening kept the data')
      await store.db.deleteFrom('clients').where('id', '=', 'cl_keep').execute()
    })

    t.test('instances starting together on an empty database migrate once', async (t) => {
      const fresh = await backend.config(t)
      if (!fresh) return
      const stores = await Promise.all([openStore(fresh), openStore(fresh), openStore(fresh)])
      t.teardown(() => Promise.all(stores.map((s) => s.close())))
      const applied = await stores[0]?.db
        .selectFrom('kysely_migration' as never)
        .select('name' as never)
        .execute()
      t.same(
        applied?.map((r) => (r as { name: string }).name),
        MIGRATIONS,
        'one row per migration, though three instances raced',
      )
      for (const s of stores) await s.ping()
    })

    t.test('clients: create, find, list, rotate, revoke', async (t) => {
      await store.clients.create({
        id: 'cl_a',
        name: 'A',
        scopes: 'read:leads',
        secret_hash: 'a'.repeat(64),
        secret_generation: 0,
        created_at: at(1),
        revoked_at: null,
      })
      await store.clients.create({
        id: 'cl_b',
        name: 'B',
        scopes: 'write:leads read:projects',
        secret_hash: 'b'.repeat(64),
        secret_generation: 0,
        created_at: at(2),
        revoked_at: null,
      })
      t.equal(await store.clients.count(), 2)
      t.match(await store.clients.find('cl_b'), { id: 'cl_b', scopes: 'write:leads read:projects', revoked_at: null })
      t.equal(await store.clients.find('nope'), undefined)
      t.same(
        (await store.clients.list()).map((c) => c.id),
        ['cl_a', 'cl_b'],
      )
      t.equal((await store.clients.find('cl_a'))?.secret_generation, 0, 'a new client: generation 0')
      t.equal(await store.clients.rotate('cl_a', 'c'.repeat(64)), true)
      t.equal((await store.clients.find('cl_a'))?.secret_hash, 'c'.repeat(64))
      t.equal((await store.clients.find('cl_a'))?.secret_generation, 1, 'a rotation counts the generation up')
      t.equal(await store.clients.revoke('cl_a', at(3)), true)
      t.equal(await store.clients.revoke('cl_a', at(4)), false, 'revoking twice changes nothing')
      t.equal(await store.clients.rotate('cl_a', 'd'.repeat(64)), false, 'a revoked client cannot be rotated')
      t.equal((await store.clients.find('cl_a'))?.revoked_at, at(3))
      await t.rejects(
        store.clients.create({
          id: 'cl_b',
          name: 'dup',
          scopes: '',
          secret_hash: 'e'.repeat(64),
          secret_generation: 0,
          created_at: at(5),
          revoked_at: null,
        }),
        'ids are unique',
      )
    })

    t.test('api keys: create, find by hash, revoke', async (t) => {
      await store.clients.createApiKey({
        id: 'key_1',
        name: 'K',
        scopes: 'read:leads',
        key_hash: 'f'.repeat(64),
        created_at: at(1),
        revoked_at: null,
      })
      t.match(await store.clients.findApiKeyByHash('f'.repeat(64)), { id: 'key_1', scopes: 'read:leads' })
      t.equal(await store.clients.findApiKeyByHash('0'.repeat(64)), undefined)
      t.equal(await store.clients.revokeApiKey('key_1', at(2)), true)
      t.equal((await store.clients.listApiKeys())[0]?.revoked_at, at(2))
    })

    t.test('leads: batches, commit order, paging, idempotency claims', async (t) => {
      const none = await store.leads.insertBatch([lead('l1', 1), lead('l2', 2, null)], new Map(), at(0))
      t.equal(none.lost.size, 0)
      t.same(
        none.stored.map((l) => l.id),
        ['l1', 'l2'],
      )
      await store.leads.insertBatch([lead('l3', 3)], new Map(), at(0))
      t.equal(await store.leads.count(), 3)
      const all = await store.leads.page(0, 10)
      t.same(
        all.map((l) => l.id),
        ['l1', 'l2', 'l3'],
        'commit order',
      )
      t.equal(all[1]?.client_id, null)
      t.same(all[0], { ...lead('l1', 1), seq: all[0]?.seq }, 'rows come back as stored')
      const s1 = await store.leads.seqOf('l1')
      t.same(
        (await store.leads.page(s1 ?? 0, 1)).map((l) => l.id),
        ['l2'],
        'keyset page after l1',
      )
      t.equal(await store.leads.seqOf('missing'), undefined)

      // Idempotency: the first claim of a key wins; a second live claim loses and stores nothing.
      const claim = (leadId: string, key: string, hash: string, s: number) => ({
        owner: 'client:cl_a',
        key,
        body_hash: hash,
        lead_id: leadId,
        created_at: at(s),
      })
      const won = await store.leads.insertBatch([lead('l4', 10)], new Map([['l4', claim('l4', 'k1', 'h1', 10)]]), at(0))
      t.equal(won.lost.size, 0)
      const lost = await store.leads.insertBatch([lead('l5', 11)], new Map([['l5', claim('l5', 'k1', 'h2', 11)]]), at(0))
      t.same([...lost.lost], ['l5'], 'a live key is not claimed twice')
      t.same(lost.stored, [])
      t.equal(await store.leads.seqOf('l5'), undefined, 'the losing lead was not stored')
      t.match(await store.leads.findIdempotency('client:cl_a', 'k1', at(0)), { body_hash: 'h1', lead_id: 'l4', received_at: at(10) })
      // An expired key (created before the cutoff) is claimed again.
      const again = await store.leads.insertBatch([lead('l6', 30)], new Map([['l6', claim('l6', 'k1', 'h3', 30)]]), at(20))
      t.equal(again.lost.size, 0, 'an expired key is reclaimed')
      t.match(await store.leads.findIdempotency('client:cl_a', 'k1', at(20)), { body_hash: 'h3', lead_id: 'l6' })
      t.equal(await store.leads.findIdempotency('client:cl_a', 'k1', at(31)), undefined, 'past the window the key is gone')
      t.equal(await store.leads.sweepIdempotency(at(31)), 1)

      // A failing batch stores nothing at all (atomic).
      await t.rejects(store.leads.insertBatch([lead('l7', 40), lead('l1', 41)], new Map(), at(0)), 'duplicate id fails the batch')
      t.equal(await store.leads.seqOf('l7'), undefined, 'no part of a failed batch is visible')
    })

    t.test('leads: listeners write in the batch transaction, about the stored leads only', async (t) => {
      const seen: string[][] = []
      let fail = false
      const listener: LeadListener = {
        inTransaction(leads, values) {
          seen.push(leads.map((l) => l.id))
          const events = eventStatements({ dialect: connection.dialect, values }, leads.map(leadReceived), true)
          return fail ? [...events, sql`select * from no_such_table`] : events
        },
        afterCommit: () => t.fail('afterCommit is the caller’s (the writer’s) to run'),
      }
      const repo = new LeadsRepository(connection, [listener])
      const claim = { owner: 'client:cl_l', key: 'lk', body_hash: 'h', lead_id: 'lst-1', created_at: at(50) }
      await repo.insertBatch([lead('lst-1', 50)], new Map([['lst-1', claim]]), at(0))
      const batch = await repo.insertBatch(
        [lead('lst-2', 51), lead('lst-3', 52)],
        new Map([['lst-2', { ...claim, lead_id: 'lst-2', body_hash: 'h2' }]]),
        at(0),
      )
      t.same([...batch.lost], ['lst-2'])
      t.same(
        batch.stored.map((l) => l.id),
        ['lst-3'],
      )
      t.same(seen, [['lst-1'], ['lst-2', 'lst-3']], 'the listener is given the batch, its claims undecided')
      t.equal(batch.results.length, 1, 'one list of results per listener')
      t.equal(batch.results[0]?.length, connection.dialect === 'postgres' ? 1 : 2, 'one result per statement it gave')
      t.equal(batch.results[0]?.at(-1)?.rowCount, 0, 'no endpoint: no delivery')
      const events = await store.db.selectFrom('webhook_events').select(['payload']).execute()
      const leadIds = events.map((e) => (JSON.parse(e.payload) as { data: { id: string } }).data.id)
      t.same(leadIds.sort(), ['lst-1', 'lst-3'], 'one event per stored lead, committed with it, none for the idempotency loser')

      fail = true
      await t.rejects(repo.insertBatch([lead('lst-4', 53)], new Map(), at(0)), /no_such_table/)
      t.equal(await repo.seqOf('lst-4'), undefined, 'a failing listener statement stores nothing of the batch')
      t.equal((await store.db.selectFrom('webhook_events').select('id').execute()).length, 2, 'and none of its events')
      await store.db.deleteFrom('webhook_events').execute()
    })

    t.test('leads: values of any text travel intact through a batch', async (t) => {
      // Quotes, backslashes, dollar quotes (PostgreSQL's literals), SQL, JSON escapes, every plane, line
      // separators, and lone surrogates (not UTF-16 text).
      const odd = `O'Brien \\ \\' " \\u0000 ; drop table leads; -- $1 $studio$ $$ ? 漢字 🏛️ \u2028 \\x`
      const stored = await store.leads.insertBatch(
        [
          {
            id: 'odd-1',
            fields: { name: odd, email: 'odd@example.com', phone: '+1 555 0100', note: 'a\nb\tc' },
            received_at: at(70),
            client_id: "cl_'x",
          },
        ],
        new Map([['odd-1', { owner: `client:o'b\\`, key: `k'\\"`, body_hash: 'h', lead_id: 'odd-1', created_at: at(70) }]]),
        at(0),
      )
      t.same(stored.lost.size, 0)
      const [row] = (await store.leads.page(0, 1000)).filter((l) => l.id === 'odd-1')
      t.same(row?.fields, { name: odd, email: 'odd@example.com', phone: '+1 555 0100', note: 'a\nb\tc' }, 'the fields, byte for byte')
      t.equal(row?.client_id, "cl_'x")
      t.match(await store.leads.findIdempotency(`client:o'b\\`, `k'\\"`, at(0)), { lead_id: 'odd-1', body_hash: 'h' })
      // A lone surrogate fails no batch: in the fields (a JSON document) it is kept as its JSON
      // escape and reads back as given; in a column of its own it becomes U+FFFD.
      const lonely = { name: 'Lone \ud800 surrogate', email: 'l@example.com', phone: '+1 555 0101' }
      await store.leads.insertBatch([{ ...lead('odd-2', 71), fields: lonely, client_id: 'cl_\udc00' }], new Map(), at(0))
      const [lone] = (await store.leads.page(0, 1000)).filter((l) => l.id === 'odd-2')
      t.same(lone?.fields, lonely, 'the fields read back as given')
      t.equal(lone?.client_id, 'cl_\ufffd', 'a lone surrogate in a column is stored as U+FFFD')
      await store.db.deleteFrom('idempotency_keys').where('lead_id', '=', 'odd-1').execute()
      await store.db.deleteFrom('leads').where('id', 'in', ['odd-1', 'odd-2']).execute()
    })

    t.test('leads: two writers on one database; the log only ever grows at its end', async (t) => {
      // Two instances (two connections) commit leads while a reader pages the log with a cursor,
      // as a consumer of GET /leads.json?after= does. Writer A's batch is held open inside its
      // transaction (a listener's statement that sleeps, after A's insert has drawn its seq) while
      // writer B commits its own. Whatever the reader saw at any moment must be a prefix of the
      // final log: a lead appearing before one already seen would be skipped for good by a reader
      // that has moved its cursor past it.
      const other = await openStore(config)
      t.teardown(() => other.close())
      // On SQLite the write lock orders the two batches whatever the timing: nothing to hold there.
      const holding: LeadListener = {
        inTransaction: () => (connection.dialect === 'postgres' ? [sql`select pg_sleep(0.5)`] : []),
      }
      const before = (await store.leads.page(0, 1000)).map((l) => l.id)
      const a = new LeadsRepository(connection, [holding]).insertBatch([lead('order-a', 60)], new Map(), at(0))
      // A is inside its transaction, its lead inserted, once its sleep runs (PostgreSQL; SQLite's
      // write lock orders the two whatever the timing).
      if (connection.dialect === 'postgres') {
        for (let i = 0; i < 200; i++) {
          const active = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where state = 'active' and query like '%pg_sleep(0.5)%' and pid <> pg_backend_pid()`.execute(other.db)
          if ((active.rows[0]?.n ?? 0) > 0) break
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const b = new LeadsRepository(other).insertBatch([lead('order-b', 61)], new Map(), at(0))
      const seen: string[][] = []
      const look = async () => seen.push((await store.leads.page(0, 1000)).map((l) => l.id).slice(before.length))
      // B has had time to commit if nothing holds it back (250 ms is ages for one INSERT).
      for (let i = 0; i < 5; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        await look()
      }
      await Promise.all([a, b])
      await look()
      const final = seen[seen.length - 1] ?? []
      t.same([...final].sort(), ['order-a', 'order-b'], 'both batches are stored')
      for (const view of seen) {
        t.same(view, final.slice(0, view.length), `the reader saw [${view.join(', ')}], a prefix of the final log`)
      }
      await store.db.deleteFrom('leads').where('id', 'in', ['order-a', 'order-b']).execute()
    })

    t.test('webhooks: outbox fan-out, exclusive leases, due order, attempts, replay, status', async (t) => {
      const wh = store.webhooks
      const endpoint = (id: string, events = 'lead.received', s = 0) => ({
        id,
        url: `https://${id}.example/hook`,
        events,
        secret: 'whsec_x',
        created_at: at(s),
      })
      await wh.addEndpoint(endpoint('we_a', 'lead.received', 1))
      await wh.addEndpoint(endpoint('we_b', 'lead.received', 2))
      await wh.addEndpoint(endpoint('we_other', 'something.else', 3))
      await wh.setDisabled('we_b', { at: at(4), reason: 'answered 410 Gone' })
      const events = ['w1', 'w2', 'w3'].map((id, i) => leadReceived(lead(id, 60 + i) as NewLead))
      t.equal(
        await store.db.transaction().execute((trx) => writeEvents(trx, connection, events)),
        3,
        'one delivery per event for the one subscribed, enabled endpoint',
      )
      t.equal(
        await store.db.transaction().execute((trx) =>
          writeEvents(
            trx,
            connection,
            [leadReceived(lead('w0', 59) as NewLead)].map((e) => ({ ...e, type: 'nobody.listens' })),
          ),
        ),
        0,
        'no delivery for an event no endpoint subscribes to',
      )
      await store.db.deleteFrom('webhook_events').where('type', '=', 'nobody.listens').execute()
      const ids = events.map((e) => e.id)
      t.same(
        (await wh.due('we_a', at(59), 10)).map((d) => d.event_id),
        [],
        'nothing is due before its time',
      )
      t.same(
        (await wh.due('we_a', at(90), 10)).map((d) => d.event_id),
        ids,
        'the subscribed, enabled endpoint has every event, in order',
      )
      t.same(await wh.due('we_b', at(90), 10), [], 'a disabled endpoint gets no new deliveries')
      t.same(await wh.due('we_other', at(90), 10), [], 'an endpoint not subscribed gets none')

      // Leases: one holder at a time; renewing needs the lease; a lapsed lease is taken over.
      const mine = await wh.leaseEndpoints('i1', at(90), at(110), 'healthy', 10)
      t.same(
        mine.map((e) => e.id),
        ['we_a'],
        'only endpoints with due deliveries are leased',
      )
      t.same(await wh.leaseEndpoints('i2', at(95), at(115), 'healthy', 10), [], 'a live lease is not taken')
      t.ok(await wh.renewLease('we_a', 'i1', at(120)), 'the holder renews')
      t.notOk(await wh.renewLease('we_a', 'i2', at(120)), 'another instance cannot')
      t.same(
        (await wh.leaseEndpoints('i2', at(121), at(140), 'healthy', 10)).map((e) => e.id),
        ['we_a'],
        'a lapsed lease is taken over',
      )
      await wh.releaseLease('we_a', 'i1', { at: at(122), delivered: false, failure: '503' })
      t.notOk(await wh.renewLease('we_a', 'i1', at(150)), 'releasing another owner’s lease does nothing')
      t.match(await wh.findEndpoint('we_a'), { failing_since: null, last_failure: null }, 'nor touches its health')

      // Health: a turn that ends in a failure moves the endpoint to the failing pool, with its
      // last failure; one that delivers brings it back; the failure stays on record.
      await wh.releaseLease('we_a', 'i2', { at: at(123), delivered: false, failure: 'timeout' })
      t.match(await wh.findEndpoint('we_a'), {
        failing_since: at(123),
        last_failure: 'timeout',
        last_failure_at: at(123),
        served_at: at(123),
      })
      t.same(await wh.leaseEndpoints('i1', at(124), at(144), 'healthy', 10), [], 'a failing endpoint is not among the healthy')
      t.same(
        (await wh.leaseEndpoints('i1', at(124), at(144), 'failing', 10)).map((e) => e.id),
        ['we_a'],
        'but among the failing',
      )
      await wh.releaseLease('we_a', 'i1', { at: at(125), delivered: false, failure: '503' })
      t.match(
        await wh.findEndpoint('we_a'),
        { failing_since: at(123), last_failure: '503', last_failure_at: at(125) },
        'failing since its first failure',
      )
      t.same(await wh.leaseEndpoints('i1', at(126), at(146), 'failing', 0), [], 'no room: nothing leased')
      await wh.leaseEndpoints('i1', at(126), at(146), 'failing', 1)
      await wh.releaseLease('we_a', 'i1', { at: at(127), delivered: true })
      t.match(await wh.findEndpoint('we_a'), { failing_since: null, last_failure: '503', served_at: at(127) }, 'healthy again')

      // Attempts: delivered, retried later, dead.
      const [e1, e2, e3] = ids as [string, string, string]
      await wh.recordAttempt('we_a', e1, at(100), '200', { delivered: true })
      await wh.recordAttempt('we_a', e2, at(100), '503', { retryAt: at(200) })
      await wh.recordAttempt('we_a', e3, at(100), 'connection refused', { dead: true })
      t.same(
        (await wh.due('we_a', at(150), 10)).map((d) => d.event_id),
        [],
        'the retry waits for its time',
      )
      t.match(await wh.due('we_a', at(200), 10), [{ event_id: e2, attempts: 1 }])
      t.match(await wh.deadLetters(10), [{ endpoint_id: 'we_a', event_id: e3, attempts: 1, last_outcome: 'connection refused' }])
      t.match(await wh.status(), [
        { id: 'we_a', pending: 1, delivered: 1, dead: 1, oldest_pending: at(60 + 1) },
        { id: 'we_b', pending: 0, disabled_reason: 'answered 410 Gone' },
        { id: 'we_other', pending: 0 },
      ])
      t.equal(await wh.pendingCount(), 1)

      // Replay: the dead and the delivered start over, the pending one is left as it is.
      t.equal(await wh.replay({ dead: true }, at(300)), 1, 'every dead letter is queued again (the one)')
      t.match(await wh.delivery('we_a', e3), { status: 'pending', attempts: 0 })
      t.equal(await wh.replay({ since: at(0) }, at(300)), 1, 'since: only what is not pending already (the delivered one)')
      await wh.setDisabled('we_b', null)
      t.equal(await wh.replay({ since: at(0) }, at(301), 'we_b'), 3, 'an endpoint enabled again gets what it missed, when asked')
      t.equal(await wh.eventExists(e1), true)
      t.equal(await wh.eventExists('msg_none'), false)

      // A lead's events are found by its id; deleting them (erasure) takes every delivery with
      // them, the email channel's included.
      await wh.keepEmailEndpoint(['studio@example.com'], at(500))
      await wh.keepEmailEndpoint(['studio@example.com', 'owner@example.com'], at(501))
      t.match(await wh.findEndpoint(EMAIL_ENDPOINT_ID), {
        kind: 'email',
        url: 'mailto:studio@example.com,owner@example.com',
        events: 'lead.received',
        created_at: at(500),
      })
      const gone = leadReceived(lead('w-erased', 70) as NewLead)
      await store.db.transaction().execute((trx) => writeEvents(trx, connection, [gone]))
      t.same(await wh.eventsOfLead('w-erased'), [gone.id])
      t.match(await wh.delivery(EMAIL_ENDPOINT_ID, gone.id), { status: 'pending' }, 'an email delivery per lead')
      await store.db.deleteFrom('webhook_events').where('lead_id', '=', 'w-erased').execute()
      t.same(
        await store.db.selectFrom('webhook_deliveries').select('endpoint_id').where('event_id', '=', gone.id).execute(),
        [],
        'deleting a lead’s events deletes its deliveries, email and webhook',
      )
      await wh.removeEndpoint(EMAIL_ENDPOINT_ID)

      // Rotation keeps the previous secret; removal takes the deliveries with it.
      t.ok(await wh.rotateSecret('we_a', 'whsec_y', at(400)))
      t.match(await wh.findEndpoint('we_a'), { secret: 'whsec_y', previous_secret: 'whsec_x', previous_secret_until: at(400) })
      t.ok(await wh.removeEndpoint('we_a'))
      t.notOk(await wh.removeEndpoint('we_a'))
      t.equal(await wh.delivery('we_a', e1), undefined, 'its deliveries are gone')
      for (const id of ['we_b', 'we_other']) await wh.removeEndpoint(id)
      await store.db.deleteFrom('webhook_events').execute()
    })

    t.test('002: leads stored before it keep their fields, now one document', async (t) => {
      const fresh = await backend.config(t)
      if (!fresh) return
      const old = await connect(fresh)
      t.teardown(() => old.db.destroy())
      // The first schema only, as a database written by an earlier release is.
      const first = await (await migrator(old.db as never, old.dialect)).migrateTo('001_initial')
      t.error(first.error)
      await sql`insert into leads (id, name, email, phone, received_at, client_id) values ('old-1', 'Ada Lovelace', 'ada@example.com', '+44 20 7946 0958', ${at(1)}, null)`.execute(
        old.db,
      )
      const up = await (await migrator(old.db as never, old.dialect)).migrateToLatest()
      t.error(up.error)
      const [row] = await new LeadsRepository(old).page(0, 10)
      t.same(row?.fields, { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0958' }, 'the fields, intact')
      t.equal(row?.id, 'old-1')
      t.equal(row?.received_at, at(1))
    })

    t.test('005: outbox events written before it learn the lead they are about from their payload', async (t) => {
      const fresh = await backend.config(t)
      if (!fresh) return
      const old = await connect(fresh)
      t.teardown(() => old.db.destroy())
      const before = await (await migrator(old.db as never, old.dialect)).migrateTo('004_client_secret_generation')
      t.error(before.error)
      const body = (type: string, data: object) => JSON.stringify({ type, timestamp: at(1), data })
      await sql`insert into webhook_events (id, type, payload, created_at) values
        ('msg_lead', 'lead.received', ${body('lead.received', { id: 'lead-1', name: 'Ada' })}, ${at(1)}),
        ('msg_test', 'webhook.test', ${body('webhook.test', { endpoint_id: 'we_a' })}, ${at(2)})`.execute(old.db)
      const up = await (await migrator(old.db as never, old.dialect)).migrateToLatest()
      t.error(up.error)
      const rows = await sql<{ id: string; lead_id: string | null }>`select id, lead_id from webhook_events order by id`.execute(old.db)
      t.same(
        rows.rows,
        [
          { id: 'msg_lead', lead_id: 'lead-1' },
          { id: 'msg_test', lead_id: null },
        ],
        "a lead's event names its lead; a test event names none",
      )
    })

    t.test('catalogue: publish replaces whole, etag follows content, unpublish', async (t) => {
      t.equal(await store.catalogue.current(), undefined)
      const e1 = await store.catalogue.publish([{ id: 'a' }, { id: 'b' }], at(1))
      t.equal(await store.catalogue.currentEtag(), e1)
      t.same((await store.catalogue.current())?.projects, [{ id: 'a' }, { id: 'b' }])
      const e2 = await store.catalogue.publish([{ id: 'b' }], at(2))
      t.not(e2, e1)
      t.same((await store.catalogue.current())?.projects, [{ id: 'b' }])
      t.equal(await store.catalogue.publish([{ id: 'a' }, { id: 'b' }], at(3)), e1, 'same content, same etag')
      t.equal(await store.catalogue.publish([], at(4)), undefined)
      t.equal(await store.catalogue.current(), undefined)
    })
  })
}

// Without the cross-process lock this fails ("table clients already exists"): the processes
// wait for one agreed instant, so their migrations really overlap.

t.test('SQLite statements are prepared once per text, except while an iterator holds one', async (t) => {
  const db = new SQLite(':memory:')
  t.teardown(() => db.close())
  db.exec('create table t (a integer); insert into t values (1), (2), (3)')
  const cache = new StatementCache(db)
  const first = cache.prepare('select a from t order by a')
  t.equal(cache.prepare('select a from t order by a'), first, 'the same text: the same statement')
  t.not(cache.prepare('select a from t order by a desc'), first, 'another text: another statement')
  const iterator = first.iterate()
  iterator.next()
  const second = cache.prepare('select a from t order by a')
  t.not(second, first, 'busy with an open iterator: a statement of its own')
  t.same(
    second.all().map((r) => (r as { a: number }).a),
    [1, 2, 3],
    'which runs while the iterator is open',
  )
  iterator.return?.()
  t.equal(cache.prepare('select a from t order by a'), first, 'the kept one again once the iterator is closed')
  for (let i = 0; i < 300; i++) cache.prepare(`select ${i}`)
  t.equal(cache.size, 256, 'bounded')
})

t.test('PostgreSQL: opening a store is not disturbed by other schemas created and dropped meanwhile', async (t) => {
  const pgBackend = backends.find((b) => b.name === 'postgres')
  const config = await pgBackend?.config(t)
  if (!config?.databaseUrl) return
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: PG_BASE })
  await admin.connect()
  t.teardown(() => admin.end())
  // Another application (or another test) churning schemas in the same database: each is
  // created with a table and dropped again, while this store opens over and over.
  const others = Array.from({ length: 40 }, (_, i) => `churn_${process.pid}_${i}`)
  t.teardown(async () => {
    for (const name of others) await admin.query(`drop schema if exists ${name} cascade`)
  })
  let churning = true
  let cycles = 0
  const churn = (async () => {
    while (churning) {
      for (const name of others) await admin.query(`create schema if not exists ${name}; create table if not exists ${name}.t (a int)`)
      for (const name of others) await admin.query(`drop schema ${name} cascade`)
      cycles++
    }
  })()
  const failures: string[] = []
  let opens = 0
  // beforeMigrating makes the open list the migrations before applying them, as the server does.
  while (opens < 30 || cycles < 3) {
    try {
      const store = await openStore(config, { beforeMigrating: async () => {} })
      await store.close()
    } catch (err) {
      failures.push((err as Error).message)
    }
    opens++
  }
  churning = false
  await churn
  t.ok(cycles >= 3, `${cycles} cycles of 40 schemas created and dropped during ${opens} opens`)
  t.same(failures, [], 'every open succeeded')
})

t.test('PostgreSQL: a batch statement is prepared once per connection, and a failed batch leaves no connection in doubt', async (t) => {
  const pgBackend = backends.find((b) => b.name === 'postgres')
  const config = await pgBackend?.config(t)
  if (!config?.databaseUrl) return
  const store = await openStore(config)
  t.teardown(() => store.close())
  // Each batch reads back its value, and the statements its own connection holds prepared.
  const probe = (value: string, extra: ReturnType<typeof sql>[] = []) =>
    store.batch([
      sql`select ${value}::text as v, pg_backend_pid() as pid`,
      ...extra,
      sql`select name, prepare_time::text as at from pg_prepared_statements where name like 'studio_batch%' order by name`,
    ])
  const seen = new Map<string, string>()
  const echo: string[] = []
  const check = (results: Awaited<ReturnType<typeof probe>>, value: string) => {
    const [first] = results[0]?.rows ?? []
    echo.push(String(first?.v))
    for (const row of results.at(-1)?.rows ?? []) {
      const key = `${first?.pid}/${row.name}`
      const at = String(row.at)
      if (!seen.has(key)) seen.set(key, at)
      else if (seen.get(key) !== at) t.fail(`${key} prepared again at ${at} (first at ${seen.get(key)}) for ${value}`)
    }
  }
  for (let i = 0; i < 20; i++) check(await probe(`v${i}`), `v${i}`)
  // Ten at once: the pool opens more connections, each preparing what it runs once.
  const many = await Promise.all(Array.from({ length: 10 }, (_, i) => probe(`w${i}`)))
  for (const [i, r] of many.entries()) check(r, `w${i}`)
  t.same(
    echo,
    [...Array.from({ length: 20 }, (_, i) => `v${i}`), ...Array.from({ length: 10 }, (_, i) => `w${i}`)],
    'every batch ran its own values',
  )
  const pids = new Set([...seen.keys()].map((k) => k.split('/')[0]))
  t.equal(seen.size, pids.size * 2, `each of ${pids.size} connections prepared the two statements once, and kept them`)

  // A batch that fails after preparing: its connection is closed, and the next batches still run.
  await t.rejects(probe('x', [sql`select * from no_such_table`]), /no_such_table/)
  for (let i = 0; i < 12; i++) {
    const results = await probe(`y${i}`)
    t.equal(results[0]?.rows[0]?.v, `y${i}`)
  }
  // A batch that fails before a statement new to its connection: that statement was never
  // prepared there. Were the connection kept, the next batch of that statement (one after
  // another, it gets the pool's last idle connection) would EXECUTE a name that does not exist.
  await t.rejects(store.batch([sql`select * from no_such_table`, sql`select ${'fresh'}::text as fresh`]), /no_such_table/)
  const [fresh] = await store.batch([sql`select ${'fresh'}::text as fresh`])
  t.equal(fresh?.rows[0]?.fresh, 'fresh', 'a statement whose PREPARE a failure skipped runs in the next batch')

  // A value that is not text, a number or null (an object) is refused before a connection is taken: more such
  // batches than the pool has connections, and the next batch still gets one.
  for (let i = 0; i < 25; i++) {
    await t.rejects(store.batch([sql`select ${new Date(0)}::text as v`]), /batch: a parameter of type object/)
  }
  t.equal((await probe('after refusals'))[0]?.rows[0]?.v, 'after refusals', 'no connection was kept by a refused batch')

  // More texts than a connection keeps: one after another (on one connection, the pool's last
  // idle one), the first prepared and kept up to the bound, the rest prepared, run and forgotten.
  const sums: unknown[] = []
  for (let i = 0; i < 80; i++) {
    const [result] = await store.batch([sql`select ${sql.raw(String(i))} + ${'1'}::int as n`])
    sums.push(result?.rows[0]?.n)
  }
  t.same(
    sums,
    Array.from({ length: 80 }, (_, i) => i + 1),
    'eighty distinct texts, each with its result',
  )
  const kept = ((await probe('z')).at(-1)?.rows ?? []).map((r) => String(r.name))
  t.ok(kept.length > 40 && kept.length <= 64, `a connection keeps many, and at most 64 (${kept.length})`)
  t.same(
    kept.filter((name) => name.includes('once')),
    [],
    'none of those run once is left prepared',
  )
})
