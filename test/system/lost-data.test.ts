// The data folder deleted (or its database replaced) while the server runs: nothing more is
// acknowledged into a file that is gone, /readyz fails, one log line says why, and the CLI does
// not create a database the server is not using. The same for the database's -wal and -shm
// (finding 17.3): on a real server process, with kill -9 and a restart, no acknowledged lead is
// lost; and in a transaction, a commit is acknowledged only if it reached studio.db. SQLite
// whatever the suite's backend: the case is the embedded file's.
import { existsSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { createConfig } from '../../config.js'
import { openStore } from '../../plugins/store/open.js'
import { call, leadOf, tokenFor } from '../helpers/app.js'
import { field, run } from '../helpers/cli.js'
import { readLog, submitMany } from '../helpers/flood.js'
import { testdir } from '../helpers/folders.js'
import { captureLog, type LogCapture } from '../helpers/log.js'
import { sharedSecrets, startServer, tokenFrom } from '../helpers/processes.js'

const LEAD = '/scripts/enquiry_backend.php'

async function appWithLog(t: Test): Promise<{ app: FastifyInstance; dataDir: string; log: LogCapture }> {
  const log = captureLog()
  const dataDir = join(testdir(t, {}), 'var')
  // A configured enquiry contact, so that the only warnings are about the data folder.
  const config = createConfig({ dataDir, databaseUrl: undefined, logLevel: 'info', enquiryContact: 'Write to hello@studio.example' })
  const app = await buildApp(config, {
    logger: { level: 'info', stream: log.stream },
  })
  t.teardown(() => app.close())
  await app.ready()
  return { app, dataDir, log }
}

for (const what of ['deleted', 'replaced'] as const) {
  t.test(`the data folder ${what} under a running server: 503, /readyz fails, one log line`, async (t) => {
    const { app, dataDir, log: captured } = await appWithLog(t)
    const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
    const auth = { authorization: `Bearer ${token}` }
    t.equal((await call(t, app, { method: 'POST', url: LEAD, headers: auth, payload: leadOf(1) })).statusCode, 200, 'before: stored')

    if (what === 'deleted') {
      rmSync(dataDir, { recursive: true, force: true })
    } else {
      // Moved away, and a fresh database made where it was (as a CLI used to).
      renameSync(dataDir, `${dataDir}.old`)
      const other = await openStore({ dataDir, databaseUrl: undefined, dbPoolMax: 1 })
      await other.close()
    }

    for (let i = 2; i <= 3; i++) {
      const res = await call(t, app, { method: 'POST', url: LEAD, headers: auth, payload: leadOf(i) })
      t.equal(res.statusCode, 503, `lead ${i} is refused, not acknowledged into a lost file`)
      t.equal(res.json().code, 'service_unavailable')
    }
    const log = await call(t, app, { url: '/leads.json', headers: auth })
    t.equal(log.statusCode, 503, 'the log is not read from a lost file either')

    const ready = await app.inject({ url: '/readyz' })
    t.equal(ready.statusCode, 503, '/readyz fails')
    t.equal(ready.json().code, 'service_unavailable')
    t.notMatch(ready.body, /sqlite|studio\.db|deleted|replaced/i, '/readyz is public: it does not say which storage, nor what befell it')
    t.match(
      await app.readiness(),
      { status: 'not ready', storage_state: 'lost' },
      "the operator's details (the metrics listener) say it is lost",
    )
    t.notMatch(ready.body, dataDir, '/readyz is public: it does not show the path')

    // A poll of the webhook worker (every second) finds the file lost too: it must not repeat it.
    await new Promise((r) => setTimeout(r, 1500))
    const lines = captured.lines()
    const said = lines.filter((l) => /studio\.db was (deleted|replaced)/.test(l.msg))
    t.equal(said.length, 1, 'one log line says why, however many requests were refused')
    t.match(said[0]?.msg, new RegExp(`${join(dataDir, 'studio.db')} was ${what} while the server had it open`))
    t.equal(said[0]?.level, 50, 'at error level')
    t.same(
      lines.filter((l) => l.level >= 40 && l !== said[0]).map((l) => l.msg),
      [],
      'no other warning or error line (the refusals are 503s, not crashes; the worker does not repeat it)',
    )
  })
}

t.test('the CLI does not create a database in the deleted folder of a running server', async (t) => {
  const { app, dataDir } = await appWithLog(t)
  await tokenFor(app, ['read:leads'])
  rmSync(dataDir, { recursive: true, force: true })
  const res = await run('clients', ['list'], createConfig({ dataDir, databaseUrl: undefined }))
  t.not(res.code, 0, 'refused')
  t.match(res.stderr, /there is no database at/)
  t.notOk(existsSync(dataDir), 'nothing created')
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 503, 'and the server still says it is not ready')
})

// The -wal or -shm deleted under a real server process (finding 17.3): leads acknowledged before
// are kept (the log's pages are copied into studio.db), later ones are refused, /readyz fails,
// and after kill -9 and a restart every lead that got a 200 is there. Meanwhile the CLI refuses to
// write beside the lost files (with -shm deleted, a client it created used to be overwritten).
for (const gone of ['-wal', '-shm'] as const) {
  t.test(`studio.db${gone} deleted under a running server: no lead acknowledged is lost`, async (t) => {
    const secrets = sharedSecrets()
    const dataDir = join(testdir(t, {}), 'var')
    const env = { ...secrets, DATA_DIR: dataDir, RATE_LIMITS: 'submitLead=100000, getLeads=100000, issueToken=100000' }
    let server = await startServer(t, env)
    const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
    const before = await submitMany(server.url, token, 10, 2)
    t.equal(before.acked.size, 10, 'ten leads acknowledged before')

    rmSync(join(dataDir, `studio.db${gone}`))
    // The CLI does not write beside the server's lost files (a second index over the same log).
    const cli = await run('clients', ['create', '--name', 'made meanwhile', '--scopes', 'read:leads'], createConfig({ dataDir }), {
      SECRET_PEPPER: secrets.SECRET_PEPPER,
    })
    t.equal(cli.code, 1, 'the CLI refuses')
    t.match(cli.stderr, `studio.db${gone} is missing while a server is using ${dataDir}`)
    const after = await submitMany(server.url, token, 10, 2)
    t.equal(after.acked.size, 0, 'nothing is acknowledged after the deletion')
    t.same([...after.statuses.keys()], [503], 'every later lead is refused with 503')
    const ready = await fetch(`${server.url}/readyz`)
    t.equal(ready.status, 503, '/readyz fails')
    // Log lines are flushed at least every second.
    const named = new RegExp(`studio\\.db${gone} was deleted while the server had it open`)
    for (let i = 0; i < 100 && !named.test(server.output()); i++) await new Promise((r) => setTimeout(r, 100))
    t.match(server.output(), named, 'the log names the file')

    await server.kill9()
    server = await startServer(t, { ...env, PORT: String(server.port) })
    const log = await readLog(server.url, token)
    const ids = new Set(log.map((l) => l.id))
    t.same(
      [...before.acked.keys()].filter((id) => !ids.has(id)),
      [],
      'after kill -9 and a restart, every lead acknowledged before the deletion is there',
    )
    const again = await run('clients', ['create', '--name', 'made after', '--scopes', 'read:leads'], createConfig({ dataDir }), {
      SECRET_PEPPER: secrets.SECRET_PEPPER,
    })
    t.equal(again.code, 0, 'after the restart the CLI works again')
    await tokenFrom(server.url, field(again.stdout, 'client_id'), field(again.stdout, 'client_secret'))
    t.equal(await server.stop(), 0)
  })
}

// A file deleted while a transaction is under way: its COMMIT is acknowledged only if what it
// committed reaches the database file the next start reads.
for (const gone of ['-wal', '-shm', ''] as const) {
  t.test(`studio.db${gone} deleted during a transaction: the commit ${gone ? 'is saved into studio.db' : 'fails'}`, async (t) => {
    const { app, dataDir, log: captured } = await appWithLog(t)
    const file = join(dataDir, 'studio.db')
    const commit = app.store.db.transaction().execute(async (trx) => {
      await sql`insert into projects (id, position, doc) values ('probe', 0, '{}')`.execute(trx)
      if (gone) rmSync(`${file}${gone}`)
      else renameSync(file, `${file}.moved`)
    })
    if (gone) {
      await commit
      t.pass('the commit is acknowledged: its pages were copied into studio.db')
    } else {
      await t.rejects(commit, { code: 'STORAGE_LOST' }, 'the commit into a file that is gone is not acknowledged')
    }
    t.equal((await app.inject({ url: '/readyz' })).statusCode, 503, '/readyz fails either way')
    t.match(captured.lines().find((l) => l.level === 50)?.msg, `studio.db${gone} was deleted while the server had it open`)
    await app.close()
    if (gone) {
      const reopened = new SQLite(file, { readonly: true })
      t.same(reopened.prepare(`select id from projects where id = 'probe'`).all(), [{ id: 'probe' }], 'the row is in studio.db')
      reopened.close()
    }
  })
}
