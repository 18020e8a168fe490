// Lead delivery on real server processes, with a real receiver verifying every delivery:
//  1. kill -9 during a 2,000-lead flood, then a restart: every acknowledged lead is delivered at
//     least once, validly signed, duplicates under one webhook-id, and no event for a lead that
//     was not stored; on SQLite and on PostgreSQL (a throwaway server).
//  2. Two instances sharing PostgreSQL, one receiver: in a steady run each event is delivered
//     exactly once to each endpoint.
// The endpoints are added with the CLI, as an operator would.
import t, { type Test } from 'tap'
import { createConfig } from '../../config.js'
import { field, run } from '../helpers/cli.js'
import { readLog, submitMany } from '../helpers/flood.js'
import { testdir } from '../helpers/folders.js'
import {
  freshMachineDatabase,
  needsMachinePostgres,
  needsPostgres,
  type ServerProcess,
  sharedSecrets,
  startServer,
  throwawayPostgres,
  tokenFrom,
} from '../helpers/processes.js'
import { type Delivery, type Receiver, receiver } from '../helpers/receiver.js'

// A restart after kill -9 waits for the dead instance's endpoint lease to lapse (20 s), on top
// of two floods and a throwaway PostgreSQL: more than the suite's 120 s per file on a busy machine.
t.setTimeout(360_000)

const RATE_LIMITS = 'submitLead=1000000, getLeads=1000000, issueToken=1000000'

/**
 * An endpoint at `path` of the receiver, added with `npm run webhooks -- add` on the given storage,
 * before the server's first start: a new installation, so the CLI is told it may create the
 * database (--new-database).
 */
async function addEndpoint(t: Test, rx: Receiver, path: string, env: Record<string, string>): Promise<string> {
  const config = createConfig({ dataDir: env.DATA_DIR as string, ...(env.DATABASE_URL && { databaseUrl: env.DATABASE_URL }) })
  const added = await run('webhooks', ['add', '--url', `${rx.url}${path}`, '--new-database'], config, { WEBHOOKS_ALLOW_PRIVATE: 'true' })
  t.equal(added.code, 0, added.stderr)
  rx.secrets.set(path, [field(added.stdout, 'secret')])
  return field(added.stdout, 'endpoint_id')
}

const leadIdOf = (d: Delivery) => d.event.data.id as string

async function killDuringFlood(t: Test, env: Record<string, string>): Promise<void> {
  const rx = await receiver(t)
  const secrets = sharedSecrets()
  const base = { ...secrets, ...env, RATE_LIMITS, WEBHOOKS_ALLOW_PRIVATE: 'true', WEBHOOKS_FIRST_RETRY_MS: '200' }
  await addEndpoint(t, rx, '/hook', base)
  let server: ServerProcess = await startServer(t, base)
  const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  let killed: Promise<void> | undefined
  const outcome = await submitMany(server.url, token, 2000, 200, (count) => {
    if (count === 400 && !killed) killed = server.kill9()
  })
  await killed
  t.ok(outcome.acked.size >= 400, `${outcome.acked.size} leads acknowledged before the kill`)
  t.ok(outcome.acked.size < 2000, 'the kill interrupted the submissions')
  const beforeRestart = rx.deliveries.length
  t.comment(`${beforeRestart} deliveries before the kill`)

  server = await startServer(t, { ...base, PORT: String(server.port) })
  const stored = new Set((await readLog(server.url, token)).map((l) => l.id))
  // Every stored lead (acknowledged, or committed just before the kill) is announced.
  await rx.waitFor((d) => new Set(d.map(leadIdOf)).size >= stored.size, 120_000)
  const delivered = new Set(rx.deliveries.map(leadIdOf))
  const missing = [...outcome.acked.keys()].filter((id) => !delivered.has(id))
  t.same(missing, [], `every acknowledged lead (${outcome.acked.size}) delivered at least once`)
  t.same(
    [...delivered].filter((id) => !stored.has(id)),
    [],
    'no event for a lead that was not stored',
  )
  t.equal(delivered.size, stored.size, 'every stored lead delivered')
  t.same(
    rx.deliveries.filter((d) => d.verifiedBy.length !== 1 || !d.valid).map((d) => d.id),
    [],
    'every delivery verifies with the endpoint secret and matches the spec',
  )
  const idsPerLead = new Map<string, Set<string>>()
  for (const d of rx.deliveries) idsPerLead.set(leadIdOf(d), (idsPerLead.get(leadIdOf(d)) ?? new Set()).add(d.id))
  t.same(
    [...idsPerLead].filter(([, ids]) => ids.size !== 1).map(([lead]) => lead),
    [],
    'a lead delivered twice carries the same webhook-id both times',
  )
  t.comment(`${rx.deliveries.length} deliveries of ${delivered.size} leads (${rx.deliveries.length - delivered.size} duplicates)`)
  const sent = outcome.acked.get(leadIdOf(rx.deliveries[0] as Delivery))
  if (sent) t.match(rx.deliveries[0]?.event.data, sent, 'a delivery carries the lead as it was sent')
  t.equal(await server.stop(), 0)
}

t.test('kill -9 during a 2,000-lead flood, then restart: every acknowledged lead delivered: SQLite', async (t) => {
  await killDuringFlood(t, { DATA_DIR: `${testdir(t, { data: {} })}/data` })
})

t.test('kill -9 during a 2,000-lead flood, then restart: every acknowledged lead delivered: PostgreSQL', async (t) => {
  if (!needsPostgres(t)) return
  const pg = await throwawayPostgres(t)
  await killDuringFlood(t, { DATA_DIR: `${testdir(t, { data: {} })}/data`, DATABASE_URL: pg.url })
})

t.test('two instances on PostgreSQL, one receiver: each event delivered exactly once per endpoint', async (t) => {
  const databaseUrl = await freshMachineDatabase(t)
  if (!needsMachinePostgres(t, databaseUrl)) return
  const rx = await receiver(t)
  const secrets = sharedSecrets()
  const dirs = testdir(t, { a: {}, b: {} })
  const env = {
    ...secrets,
    DATABASE_URL: databaseUrl,
    RATE_LIMITS,
    WEBHOOKS_ALLOW_PRIVATE: 'true',
    PUBLIC_BASE_URL: 'http://api.studio.test',
  }
  // Two endpoints, so both instances have one to deliver to at the same time.
  for (const path of ['/one', '/two']) await addEndpoint(t, rx, path, { ...env, DATA_DIR: `${dirs}/a` })
  const a = await startServer(t, { ...env, DATA_DIR: `${dirs}/a` })
  const b = await startServer(t, { ...env, DATA_DIR: `${dirs}/b` })
  const token = await tokenFrom(a.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)

  const [onA, onB] = await Promise.all([submitMany(a.url, token, 150, 10), submitMany(b.url, token, 150, 10)])
  const acked = new Set([...onA.acked.keys(), ...onB.acked.keys()])
  t.equal(acked.size, 300, 'every lead acknowledged, half through each instance')
  await rx.waitFor((d) => d.length >= 600, 120_000)
  // A moment more, in case a second copy of anything is on its way.
  await new Promise((r) => setTimeout(r, 1500))

  t.equal(rx.deliveries.length, 600, '300 leads × 2 endpoints, no more')
  const seen = new Set(rx.deliveries.map((d) => `${d.path} ${d.id}`))
  t.equal(seen.size, 600, 'each event delivered exactly once to each endpoint')
  for (const path of ['/one', '/two']) {
    const here = rx.deliveries.filter((d) => d.path === path)
    t.same(new Set(here.map(leadIdOf)), acked, `${path}: every lead`)
    t.ok(
      here.every((d) => d.verifiedBy.length === 1 && d.valid),
      `${path}: verified with its own secret`,
    )
  }
  t.equal(await a.stop(), 0)
  t.equal(await b.stop(), 0)
})
