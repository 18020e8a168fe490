// Two API instances on different ports sharing PostgreSQL and Redis (the machine's own servers,
// a fresh database and key prefix): tokens, leads and rate-limit budgets (the anonymous MCP
// consultations' included) are shared; a rotation or a revocation reaches both within the client
// status TTL.
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { cliBundle } from '../helpers/bundles.js'
import { testdir } from '../helpers/folders.js'
import {
  freshMachineDatabase,
  machineRedisAvailable,
  needsMachinePostgres,
  requirePart,
  sharedSecrets,
  startServer,
  tokenFrom,
} from '../helpers/processes.js'

t.test('two instances share tokens, leads and one rate-limit budget', async (t) => {
  const databaseUrl = await freshMachineDatabase(t)
  if (!needsMachinePostgres(t, databaseUrl)) return
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
    DATABASE_URL: databaseUrl,
    REDIS_URL: 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `mi-${randomBytes(4).toString('hex')}:`,
    RATE_LIMITS: 'getProjects=6/1 minute, requestConsultationAnonymous=3/1 minute',
    CLIENT_STATUS_TTL_SECONDS: '1',
    // Behind a load balancer every instance has the same public address: the token issuer.
    PUBLIC_BASE_URL: 'http://api.studio.test',
  }
  // One testdir call: a second one would wipe the first's folder.
  const dirs = testdir(t, { a: {}, b: {} })
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

  // Anonymous consultations from one address: 3 across both instances, then a tool error.
  const outcomes: string[] = []
  for (let i = 0; i < 5; i++) {
    const client = new Client({ name: 'anonymous', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${(i % 2 ? b : a).url}/mcp`)))
    const lead = { name: `Prospect ${i}`, email: `p${i}@example.com`, phone: `+44 20 7946 000${i}`, consent: true }
    const result = await client.callTool({ name: 'request_consultation', arguments: lead })
    const text = (result.content as { text?: string }[])[0]?.text ?? ''
    outcomes.push(result.isError ? (/retry after \d+ seconds/.test(text) ? 'limited' : text) : 'stored')
    await client.close()
  }
  t.same(outcomes, ['stored', 'stored', 'stored', 'limited', 'limited'], 'one anonymous budget across both instances')

  // A rotation made with the CLI (on any machine with the database) ends the old secret's tokens
  // on both instances within the status TTL; the new secret's tokens work on both at once.
  for (const server of [a, b]) t.equal((await fetch(`${server.url}/leads.json?limit=1`, { headers: auth })).status, 200)
  const rotated = await promisify(execFile)(process.execPath, [cliBundle(), 'clients', 'rotate', secrets.BOOTSTRAP_CLIENT_ID], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: databaseUrl as string,
      SECRET_PEPPER: secrets.SECRET_PEPPER,
      DATA_DIR: testdir(t, {}),
    },
  })
  const newSecret = /^client_secret: (\S+)$/m.exec(rotated.stdout)?.[1] ?? ''
  const fresh = { authorization: `Bearer ${await tokenFrom(b.url, secrets.BOOTSTRAP_CLIENT_ID, newSecret)}` }
  for (const server of [a, b]) {
    t.equal(
      (await fetch(`${server.url}/leads.json?limit=1`, { headers: fresh })).status,
      200,
      `the new secret's token works on ${server === a ? 'A' : 'B'} at once`,
    )
  }
  await new Promise((r) => setTimeout(r, 1500))
  for (const server of [a, b]) {
    const res = await fetch(`${server.url}/leads.json?limit=1`, { headers: auth })
    t.equal(res.status, 401, `the old secret's token is refused by ${server === a ? 'A' : 'B'}`)
  }

  // A revocation made through the storage reaches both instances within the status TTL.
  const { default: pg } = await import('pg')
  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  await db.query('update clients set revoked_at = $1 where id = $2', [new Date().toISOString(), secrets.BOOTSTRAP_CLIENT_ID])
  await db.end()
  await new Promise((r) => setTimeout(r, 1500))
  for (const server of [a, b]) {
    const res = await fetch(`${server.url}/leads.json?limit=1`, { headers: fresh })
    t.equal(res.status, 401, `revoked client's token refused by ${server === a ? 'A' : 'B'}`)
  }

  t.equal(await a.stop(), 0, 'A stops cleanly on SIGTERM')
  t.equal(await b.stop(), 0, 'B stops cleanly on SIGTERM')
})
