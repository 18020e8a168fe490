// Fault tests on real processes, with throwaway PostgreSQL servers on spare ports (the
// machine's shared servers are never stopped):
//  1. kill -9 while 2,000 leads are being submitted, then restart: every acknowledged lead is in
//     the log once, whole; on SQLite and on PostgreSQL.
//  2. PostgreSQL stops under load, then restarts: 503 service_unavailable meanwhile, recovery
//     without a restart of the API, nothing acknowledged lost.
// (Redis stopping under the API: test/system/shared-limits.test.ts.)
import t, { type Test } from 'tap'
import { leadFor, type Outcome, readLog, type Sent, submitMany } from '../helpers/flood.js'
import { testdir } from '../helpers/folders.js'
import { needsPostgres, type ServerProcess, sharedSecrets, startServer, throwawayPostgres, tokenFrom } from '../helpers/processes.js'

// Server processes killed and restarted under load: up to 58 s in CI runs, half the suite's 120 s per file.
t.setTimeout(300_000)

/** Every acknowledged lead once and whole; no row that is not a lead we sent, none twice. */
function checkLog(t: Test, log: Awaited<ReturnType<typeof readLog>>, acked: Map<string, Sent>, sentTotal: number): void {
  const ids = log.map((l) => l.id)
  t.equal(new Set(ids).size, ids.length, 'no duplicate ids in the log')
  const byId = new Map(log.map((l) => [l.id, l]))
  let missing = 0
  let altered = 0
  for (const [id, sent] of acked) {
    const row = byId.get(id)
    if (!row) missing++
    else if (row.name !== sent.name || row.email !== sent.email || row.phone !== sent.phone) altered++
  }
  t.equal(missing, 0, `every acknowledged lead (${acked.size}) is in the log`)
  t.equal(altered, 0, 'acknowledged leads are stored whole')
  const sentEmails = new Set(Array.from({ length: sentTotal }, (_, n) => leadFor(n).email))
  const strangers = log.filter((l) => !sentEmails.has(l.email) || !l.name || !l.phone || !l.received_at)
  t.equal(strangers.length, 0, 'no partial or unknown rows')
  const emails = log.map((l) => l.email)
  t.equal(new Set(emails).size, emails.length, 'no lead stored twice')
}

async function killDuringSubmissions(t: Test, env: Record<string, string>): Promise<void> {
  const secrets = sharedSecrets()
  const base = { ...secrets, ...env, RATE_LIMITS: 'submitLead=1000000, getLeads=1000000, issueToken=1000000' }
  let server: ServerProcess = await startServer(t, base)
  const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  let killed: Promise<void> | undefined
  const outcome = await submitMany(server.url, token, 2000, 200, (count) => {
    if (count === 400 && !killed) killed = server.kill9()
  })
  await killed
  t.ok(outcome.acked.size >= 400, `${outcome.acked.size} leads acknowledged before the kill`)
  t.ok(outcome.acked.size < 2000, 'the kill interrupted the submissions')
  t.comment(`outcomes: ${JSON.stringify(Object.fromEntries(outcome.statuses))}`)
  t.notOk(outcome.statuses.has(500), 'no 500 answered')

  server = await startServer(t, { ...base, PORT: String(server.port) })
  checkLog(t, await readLog(server.url, token), outcome.acked, 2000)
  t.equal(await server.stop(), 0)
}

t.test('kill -9 during 2,000 concurrent submissions: SQLite', async (t) => {
  await killDuringSubmissions(t, { DATA_DIR: `${testdir(t, { data: {} })}/data` })
})

t.test('kill -9 during 2,000 concurrent submissions: PostgreSQL', async (t) => {
  if (!needsPostgres(t)) return
  const pg = await throwawayPostgres(t)
  await killDuringSubmissions(t, { DATA_DIR: `${testdir(t, { data: {} })}/data`, DATABASE_URL: pg.url })
})

t.test('PostgreSQL stops under load: 503s meanwhile, recovery by itself, nothing acknowledged lost', async (t) => {
  if (!needsPostgres(t)) return
  const pg = await throwawayPostgres(t)
  const secrets = sharedSecrets()
  const server = await startServer(t, {
    ...secrets,
    DATA_DIR: `${testdir(t, { data: {} })}/data`,
    DATABASE_URL: pg.url,
    RATE_LIMITS: 'submitLead=1000000, getLeads=1000000',
  })
  const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)

  const outcome: Outcome = { acked: new Map(), statuses: new Map() }
  const errorBodies: { code?: string; hint?: string }[] = []
  let stop = false
  let n = 0
  const load = async () => {
    while (!stop) {
      const lead = leadFor(n++)
      const res = await fetch(`${server.url}/scripts/enquiry_backend.php`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(lead),
      })
      outcome.statuses.set(res.status, (outcome.statuses.get(res.status) ?? 0) + 1)
      const body = (await res.json()) as { id?: string; code?: string; hint?: string }
      if (res.status === 200 && body.id) outcome.acked.set(body.id, lead)
      else errorBodies.push(body)
      if (res.status !== 200) await new Promise((r) => setTimeout(r, 20))
    }
  }
  const running = Promise.all(Array.from({ length: 8 }, load)).catch((err) => {
    stop = true
    throw new Error(`${err.message}; server output: ${server.output().slice(-3000)}`)
  })
  /** Waits (polling every 50 ms, 30 s at most) until `done` holds; whether it did. */
  const until = async (done: () => boolean | Promise<boolean>) => {
    const deadline = Date.now() + 30_000
    while (!(await done())) {
      if (Date.now() > deadline) return false
      await new Promise((r) => setTimeout(r, 50))
    }
    return true
  }
  // Under load first: leads acknowledged before PostgreSQL stops.
  await until(() => outcome.acked.size >= 50)
  await pg.stop()
  t.ok(await until(async () => (await fetch(`${server.url}/readyz`)).status === 503), '/readyz says not ready while PostgreSQL is down')
  // The outage seen by the load too, before PostgreSQL comes back.
  await until(() => (outcome.statuses.get(503) ?? 0) > 0)
  await pg.start()
  // Recovery by itself: keep the load until requests succeed again (the pool reconnects).
  const ackedAtRestart = outcome.acked.size
  const deadline = Date.now() + 20_000
  while (outcome.acked.size < ackedAtRestart + 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  stop = true
  await running
  t.comment(`outcomes: ${JSON.stringify(Object.fromEntries(outcome.statuses))}`)
  t.ok((outcome.statuses.get(503) ?? 0) > 0, 'requests during the outage got 503')
  t.notOk(outcome.statuses.has(500), 'never a 500')
  t.same(new Set(errorBodies.map((b) => b.code)), new Set(['service_unavailable']), 'every failure is service_unavailable')
  t.ok(
    errorBodies.every((b) => typeof b.hint === 'string' && b.hint.length > 0),
    'with a hint',
  )
  t.ok(outcome.acked.size >= ackedAtRestart + 50, 'the API recovered without a restart')
  t.equal((await fetch(`${server.url}/readyz`)).status, 200, '/readyz ready again')
  checkLog(t, await readLog(server.url, token), outcome.acked, n)
  t.equal(await server.stop(), 0)
})

t.test('SIGTERM under load: in-flight requests finish, exit 0, nothing acknowledged lost', async (t) => {
  const secrets = sharedSecrets()
  const base = { ...secrets, DATA_DIR: `${testdir(t, { data: {} })}/data`, RATE_LIMITS: 'submitLead=1000000, getLeads=1000000' }
  let server = await startServer(t, base)
  const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  let stopped: Promise<number | null> | undefined
  const outcome = await submitMany(server.url, token, 1000, 50, (count) => {
    if (count === 200 && !stopped) stopped = server.stop()
  })
  t.equal(await stopped, 0, 'exits 0 after draining')
  t.comment(`outcomes: ${JSON.stringify(Object.fromEntries(outcome.statuses))}`)
  t.notOk(outcome.statuses.has(500), 'no 500 answered')
  const refusals = [...outcome.statuses.keys()].filter((s) => s !== 200 && s !== 503 && s !== 'connection error')
  t.same(refusals, [], 'every request got a receipt, a 503 service_unavailable, or no connection')
  server = await startServer(t, { ...base, PORT: String(server.port) })
  checkLog(t, await readLog(server.url, token), outcome.acked, 1000)
  t.equal(await server.stop(), 0)
})
