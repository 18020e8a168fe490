// The data folder deleted (or its database replaced) while the server runs: nothing more is
// acknowledged into a file that is gone, /readyz fails, one log line says why, and the CLI does
// not create a database the server is not using. SQLite whatever the suite's backend: the case
// is the embedded file's.
import { existsSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp } from '../app.js'
import { createConfig } from '../config.js'
import { openStore } from '../plugins/store/open.js'
import { call, leadOf, tokenFor } from './helpers/app.js'
import { run } from './helpers/cli.js'
import { captureLog, type LogCapture } from './helpers/log.js'

const LEAD = '/scripts/enquiry_backend.php'

async function appWithLog(t: Test): Promise<{ app: FastifyInstance; dataDir: string; log: LogCapture }> {
  const log = captureLog()
  const dataDir = join(t.testdir({}), 'var')
  const app = await buildApp(createConfig({ dataDir, databaseUrl: undefined, logLevel: 'info' }), {
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
    t.match(ready.json().message, /deleted or replaced/)
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
