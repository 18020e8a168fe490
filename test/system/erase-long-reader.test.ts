// An erasure waiting on a long reader must not stall lead intake (third audit, finding 7): while
// another process held a read transaction for 75 s, `leads erase` waited, and intake fell from 170
// to 4.5 leads/s for 62 s, with two 503s. On SQLite the erasure's clearing ends with a TRUNCATE
// checkpoint, which took the write lock and then waited for the reader with the lock held (5 s at a
// time, retried for 60 s). Here a reader holds a read transaction (another connection, as another
// process would) while `studio leads erase` runs as a process of its own and leads keep arriving:
// every lead submitted meanwhile is acknowledged (no 503), the write lock stays free to take for
// anyone who asks while the erase waits (probes with a short busy timeout all succeed), and once
// the reader ends the erase completes, its bytes cleared. Outcomes are counted, nothing is timed.
// On PostgreSQL (DATABASE_URL) the reader is a repeatable-read transaction: the erase completes
// while it is open, and intake goes on.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import t from 'tap'
import { type Config, projectRoot } from '../../config.js'
import { leadOf, testApp, tokenFor } from '../helpers/app.js'
import { cliBundle } from '../helpers/bundles.js'

const SUBMIT = '/scripts/enquiry_backend.php'

/** `studio leads erase` as a process of its own; its output so far, and its exit. */
function eraseProcess(config: Config, email: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const env: Record<string, string | undefined> = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    DATA_DIR: config.dataDir,
    LOG_LEVEL: 'silent',
  }
  if (config.databaseUrl) env.DATABASE_URL = config.databaseUrl
  const child = spawn(process.execPath, [cliBundle(), 'leads', 'erase', '--email', email], {
    cwd: projectRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (d) => {
    output += d
  })
  child.stderr?.on('data', (d) => {
    output += d
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
  return { child, output: () => output, exited }
}

/** Resolves once `check` holds, tested each time the process writes. */
function whenOutput(child: ChildProcess, check: () => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    if (check()) return resolve()
    const test = () => {
      if (!check()) return
      child.stdout?.off('data', test)
      resolve()
    }
    child.stdout?.on('data', test)
    child.once('exit', (code) => (check() ? resolve() : reject(new Error(`the erase exited (${code}) first`))))
  })
}

/** Submits leads one after another (`lanes` at once) until stopped; every status counted. */
function intake(app: FastifyInstance, token: string, lanes = 4) {
  const statuses: Record<number, number> = {}
  let acked = 0
  let stopped = false
  let n = 1000
  const lane = async () => {
    while (!stopped) {
      const res = await app.inject({ method: 'POST', url: SUBMIT, headers: { authorization: `Bearer ${token}` }, payload: leadOf(n++) })
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
      if (res.statusCode === 200) acked++
    }
  }
  const running = Promise.all(Array.from({ length: lanes }, lane))
  return {
    statuses,
    acked: () => acked,
    /** Resolves once `more` further leads have been acknowledged. */
    async until(more: number) {
      const target = acked + more
      while (acked < target && !stopped) await new Promise((r) => setImmediate(r))
    },
    async stop() {
      stopped = true
      await running
    },
  }
}

t.test('a long reader while leads erase runs: intake goes on, the lock stays free, the erase completes after', async (t) => {
  const { app, config } = await testApp(t, { rateLimits: { submitLead: { max: 1_000_000 } } })
  const { token } = await tokenFor(app, ['write:leads'])
  for (const email of ['erase-me@example.com', 'keep@example.com']) {
    const res = await app.inject({
      method: 'POST',
      url: SUBMIT,
      headers: { authorization: `Bearer ${token}` },
      payload: { ...leadOf(1), email },
    })
    t.equal(res.statusCode, 200)
  }

  // The long reader: a read transaction on a connection of its own, as another process holds one.
  let release: () => Promise<void>
  let probe: (() => boolean) | undefined
  if (app.store.dialect === 'sqlite') {
    const file = join(config.dataDir, 'studio.db')
    const reader = new SQLite(file, { readonly: true })
    reader.exec('begin')
    reader.prepare('select count(*) from leads').get()
    release = async () => {
      reader.exec('commit')
      reader.close()
    }
    // Whoever asks for the write lock gets it within a short wait: it is never held while the erase waits.
    const prober = new SQLite(file)
    prober.pragma('busy_timeout = 250')
    probe = () => {
      try {
        prober.exec('begin immediate')
        prober.exec('rollback')
        return true
      } catch {
        return false
      }
    }
    t.teardown(() => prober.close())
  } else {
    const reader = new pg.Client({ connectionString: config.databaseUrl })
    await reader.connect()
    await reader.query('begin isolation level repeatable read')
    await reader.query('select count(*) from leads')
    release = async () => {
      await reader.query('commit')
      await reader.end()
    }
  }

  const leads = intake(app, token)
  const erase = eraseProcess(config, 'erase-me@example.com')
  await whenOutput(erase.child, () => /^erased: 1$/m.test(erase.output()))
  t.pass('the lead is erased while the reader is open')
  // The erase is clearing now (SQLite) or done (PostgreSQL): leads keep arriving meanwhile.
  await leads.until(100)
  let free = 0
  const probes = probe ? 10 : 0
  for (let i = 0; i < probes; i++) {
    if (probe?.()) free++
    await leads.until(5)
  }
  t.equal(free, probes, `the write lock was free each time it was asked for while the erase waited (${free}/${probes})`)
  await release()
  const code = await erase.exited
  await leads.until(20)
  await leads.stop()

  t.equal(code, 0, `the erase completed: ${erase.output()}`)
  if (app.store.dialect === 'sqlite') t.match(erase.output(), /^files: erased bytes cleared from the database files/m)
  t.same(Object.keys(leads.statuses), ['200'], `every lead submitted during the erase was acknowledged (${JSON.stringify(leads.statuses)})`)
  t.ok(leads.acked() >= 120 + 5 * probes, `${leads.acked()} leads acknowledged during the erase`)
  t.equal(await app.leads.count(), 1 + leads.acked(), 'all stored, and only the erased lead gone')
})
