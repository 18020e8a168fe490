// Two API instances on different ports sharing PostgreSQL and Redis (the machine's own servers,
// a fresh database and key prefix): tokens, leads and rate-limit budgets are shared.
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { freshMachineDatabase, machineRedisAvailable, requirePart, sharedSecrets, startServer, tokenFrom } from './helpers/processes.js'

t.test('two instances share tokens, leads and one rate-limit budget', async (t) => {
  const databaseUrl = await freshMachineDatabase(t)
  if (
    !requirePart(
      t,
      databaseUrl !== undefined,
      'PostgreSQL at 127.0.0.1:5432',
      'start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
    )
  )
    return
  if (
    !requirePart(
      t,
      await machineRedisAvailable(),
      'Redis at 127.0.0.1:6379',
      'start it: redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no',
    )
  )
    return

  const secrets = sharedSecrets()
  const env = {
    ...secrets,
    DATABASE_URL: databaseUrl as string,
    REDIS_URL: 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `mi-${randomBytes(4).toString('hex')}:`,
    RATE_LIMITS: 'getProjects=6/1 minute',
    CLIENT_STATUS_TTL_SECONDS: '1',
    // Behind a load balancer every instance has the same public address: the token issuer.
    PUBLIC_BASE_URL: 'http://api.studio.test',
  }
  // One testdir call: a second one would wipe the first's folder.
  const dirs = t.testdir({ a: {}, b: {} })
  const a = await startServer(t, { ...env, DATA_DIR: `${dirs}/a` })
  const b = await startServer(t, { ...env, DATA_DIR: `${dirs}/b` })

  const token = await tokenFrom(a.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  const auth = { authorization: `Bearer ${token}` }

  // A token from A works on B.
  const onB = await fetch(`${b.url}/leads.json?limit=1`, { headers: auth })
  t.equal(onB.status, 200, 'a token issued by A is accepted by B')

  // A lead written through A is in B's log.
  const lead = { name: 'Grace Hopper', email: 'grace@example.com', phone: '+1 202 555 0143' }
  const written = await fetch(`${a.url}/scripts/enquiry_backend.php`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify(lead),
  })
  t.equal(written.status, 200)
  const receipt = (await written.json()) as { id: string }
  const log = (await (await fetch(`${b.url}/leads.json`, { headers: auth })).json()) as { id: string; email: string }[]
  t.ok(
    log.some((l) => l.id === receipt.id && l.email === lead.email),
    "the lead written through A is in B's log",
  )

  // A client with a limit of 6 gets exactly 6 successes across both, then 429.
  const statuses: number[] = []
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${(i % 2 ? b : a).url}/project_metadata.json`, { headers: auth })
    statuses.push(res.status)
    if (res.status === 429) t.match(res.headers.get('retry-after'), /^\d+$/)
  }
  t.same(statuses, [200, 200, 200, 200, 200, 200, 429, 429, 429, 429], 'one budget across both instances')

  // A revocation made through the storage reaches both instances within the status TTL.
  const { default: pg } = await import('pg')
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  await db.query('update clients set revoked_at = $1 where id = $2', [new Date().toISOString(), secrets.BOOTSTRAP_CLIENT_ID])
  await db.end()
  await new Promise((r) => setTimeout(r, 1500))
  for (const server of [a, b]) {
    const res = await fetch(`${server.url}/leads.json?limit=1`, { headers: auth })
    t.equal(res.status, 401, `revoked client's token refused by ${server === a ? 'A' : 'B'}`)
  }

  t.equal(await a.stop(), 0, 'A stops cleanly on SIGTERM')
  t.equal(await b.stop(), 0, 'B stops cleanly on SIGTERM')
})
