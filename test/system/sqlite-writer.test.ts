// The embedded store writes on a worker thread (plugins/store/sqlite-thread-dialect.ts): while a
// lead's commit waits for its fsync, the event loop goes on answering, reads included. Shown on a
// real server process whose every fsync is made slow (bench/fsync-delay.c, preloaded), by the
// order in which answers arrive, not by timing thresholds: a read sent while the commit is under
// way is answered before the lead's receipt. With the commit on the main thread (as before), the
// read could only be answered after it. And a write the worker cannot make is still a 503 with
// its SQLite code behind it, not a 500.
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { sqliteFile } from '../../plugins/store/open.js'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { requirePart, sharedSecrets, startServer, tokenFrom } from '../helpers/processes.js'

const FSYNC_DELAY_MS = 300

const gcc = spawnSync('gcc', ['--version']).status === 0
if (requirePart(t, gcc, 'gcc (to build the fsync-delay shim)', 'apt-get install gcc')) {
  const shim = join(testdir(t, {}), 'fsync-delay.so')
  const built = spawnSync('gcc', ['-shared', '-fPIC', '-O2', '-o', shim, join(projectRoot, 'bench', 'fsync-delay.c'), '-ldl'], {
    encoding: 'utf8',
  })
  if (built.status !== 0) throw new Error(`building the shim failed: ${built.stderr}`)

  t.test(`every fsync ${FSYNC_DELAY_MS} ms: reads are answered while a lead's commit waits for it`, async (t) => {
    const secrets = sharedSecrets()
    const dataDir = join(testdir(t, {}), 'var')
    // A first start without the shim creates and migrates the database: with every fsync slowed,
    // each migration's commits would make start-up outlast Fastify's plugin timeout, which is not
    // what this test is about.
    const setup = await startServer(t, { ...secrets, DATA_DIR: dataDir })
    t.equal(await setup.stop(), 0, 'the data folder is set up')
    const server = await startServer(
      t,
      {
        ...secrets,
        DATA_DIR: dataDir,
        LD_PRELOAD: shim,
        FSYNC_DELAY_US: String(FSYNC_DELAY_MS * 1000),
        FSYNC_DELAY_SAY: '1',
      },
      { withinMs: 120_000 },
    )
    const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET, 'write:leads read:leads')
    const headers = { authorization: `Bearer ${token}` }
    const order: string[] = []
    const before = server.output().length

    const lead = fetch(`${server.url}/scripts/enquiry_backend.php`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify(leadOf(1)),
    }).then(async (res) => {
      order.push('lead receipt')
      return { status: res.status, body: (await res.json()) as { id: string } }
    })
    // The lead's commit waits for its fsync (the shim says so as it starts waiting).
    await server.waitFor(/fsync-delay: waiting/, 30_000, before)
    const log = await fetch(`${server.url}/leads.json`, { headers }).then(async (res) => {
      order.push('leads log')
      return { status: res.status, body: (await res.json()) as { id: string }[] }
    })
    const health = await fetch(`${server.url}/healthz`).then((res) => {
      order.push('healthz')
      return res.status
    })
    const receipt = await lead

    t.same(order, ['leads log', 'healthz', 'lead receipt'], 'the read and the health check were answered before the commit finished')
    t.equal(log.status, 200)
    t.notOk(
      log.body.some((l) => l.id === receipt.body.id),
      'the log read during the commit does not show the lead yet (nothing half-written is visible)',
    )
    t.equal(health, 200)
    t.equal(receipt.status, 200, 'the lead is acknowledged once its commit is durable')
    const after = (await (await fetch(`${server.url}/leads.json`, { headers })).json()) as { id: string }[]
    t.ok(
      after.some((l) => l.id === receipt.body.id),
      'and then it is in the log',
    )
    t.equal(await server.stop(), 0, 'a graceful stop')
  })
}

t.test('another connection holds the write lock past the busy timeout: 503, nothing stored, then it stores', async (t) => {
  // SQLite whatever the suite's backend: the case is the embedded file's.
  const { app, config } = await testApp(t, { databaseUrl: undefined })
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const LEAD = '/scripts/enquiry_backend.php'

  // As another process would (a CLI, a second server on the same folder): the write lock, held.
  const other = new SQLite(sqliteFile(config.dataDir))
  t.teardown(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  const refused = await call(t, app, { method: 'POST', url: LEAD, headers: auth, payload: leadOf(1) })
  t.equal(refused.statusCode, 503, 'SQLITE_BUSY from the writer thread is storage unavailable')
  t.equal(refused.json().code, 'service_unavailable')
  t.equal(refused.headers['retry-after'], '5')
  // Reads go on meanwhile (WAL: the main thread's connection never waits for the lock).
  const during = await call(t, app, { url: '/leads.json', headers: auth })
  t.equal(during.statusCode, 200, 'the log can be read while the lock is held')
  t.same(during.json(), [], 'and holds nothing of the refused lead')
  other.exec('ROLLBACK')

  const stored = await call(t, app, { method: 'POST', url: LEAD, headers: auth, payload: leadOf(2) })
  t.equal(stored.statusCode, 200, 'once the lock is free, the next lead is stored')
  const log = (await call(t, app, { url: '/leads.json', headers: auth })).json() as { email: string }[]
  t.same(
    log.map((l) => l.email),
    [leadOf(2).email],
    'only that one',
  )
})

t.test('the writer thread opens a transaction with its first statement: empty and failed transactions, and the next', async (t) => {
  const { app, config } = await testApp(t, { databaseUrl: undefined })
  const db = app.store.db
  // Nothing ran: nothing was begun on the worker, so nothing to commit or roll back, and the
  // writer's turn is handed on (the next write does not wait forever).
  await db.transaction().execute(async () => {})
  await t.rejects(
    db.transaction().execute(async () => {
      throw new Error('before any statement')
    }),
    /before any statement/,
  )
  // A statement that fails inside the transaction rolls back what ran before it, on the worker.
  const failing = db.transaction().execute(async (trx) => {
    await trx.insertInto('catalogue').values({ id: 99, etag: 'x', published_at: new Date().toISOString() }).execute()
    await trx.insertInto('catalogue').values({ id: 99, etag: 'y', published_at: new Date().toISOString() }).execute()
  })
  await t.rejects(failing, /UNIQUE/, 'the second insert breaks the primary key')
  const reader = new SQLite(sqliteFile(config.dataDir), { readonly: true })
  t.teardown(() => reader.close())
  t.equal(
    (reader.prepare('select count(*) as n from catalogue where id = 99').get() as { n: number }).n,
    0,
    'the first insert was rolled back',
  )
  t.notOk(reader.inTransaction)
  // And the writer goes on: a transaction after these commits.
  await db.transaction().execute(async (trx) => {
    await trx.insertInto('catalogue').values({ id: 99, etag: 'z', published_at: new Date().toISOString() }).execute()
  })
  t.equal((reader.prepare('select etag from catalogue where id = 99').get() as { etag: string }).etag, 'z', 'committed')
})
