// The scale-out mode's two instances on one database, one Redis, one set of secrets and budgets:
// getProjects on one alone, then on both at once; 1,000 requests spread over both against a
// budget of 100 per minute; the security budgets under concurrent requests over both.
import { spawnSync } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { apiEnv, CLIENT_ID, PROBE, token } from '../../lib/api.js'
import { fmt } from '../../lib/format.js'
import { log } from '../../lib/log.js'
import { benchDir } from '../../lib/paths.js'
import { freePort, request, startServer, stopServer } from '../../lib/processes.js'
import type { Figures, Load, Options, Server, Target } from '../../lib/types.js'
import { runWrk } from '../../lib/wrk.js'
import type { RedisServer } from './redis.js'

/** Two instances on one database, one Redis, one set of secrets and budgets. */
export async function twoInstances(
  options: Options,
  redis: RedisServer,
  databaseUrl: string,
  tmp: string,
  servers: (Server | undefined)[],
  targets: Target[],
) {
  const shared = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    REDIS_PREFIX: `bench-two-${randomBytes(2).toString('hex')}:`,
    JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    SECRET_PEPPER: randomBytes(32).toString('base64url'),
    LEADS_ALLOW_ANONYMOUS: 'true',
    // getProjects out of the way for the throughput runs; getLeads at 100 per minute for the count
    // (its window starts at the count's first request); the security budgets at their default
    // sizes, over an hour (the bench's first token request opens their windows well before).
    RATE_LIMITS:
      'getProjects=100000000, getLeads=100/1 minute, submitLeadAnonymous=10/1 hour, authFailures=10/1 hour, authFailuresPerAddress=20/1 hour',
    PUBLIC_BASE_URL: 'http://api.studio.bench',
  }
  const start = async (name: string) => {
    const port = await freePort()
    const metricsPort = await freePort()
    const env = apiEnv(port, join(tmp, `${name}-data`), { ...shared, METRICS_PORT: String(metricsPort) })
    const server = await startServer({
      name,
      nodeArgs: [options.serverJs],
      env: { ...env, ...options.childEnv },
      port,
      logFile: join(benchDir, `api-${name}.log`),
      probe: PROBE,
    })
    servers.push(server)
    return { server, metricsPort }
  }
  const a = await start('two-a')
  const c = await start('two-b')
  const bearer = `Bearer ${await token(a.server.port)}`
  const both = [a.server.port, c.server.port]
  log(`two instances: ${both.join(' and ')} (PostgreSQL + Redis, one budget)`)

  // Throughput: one instance with all connections, then both at once with half each.
  const load: Load = { script: 'get', path: '/project_metadata.json', authorization: bearer }
  for (const s of [a.server, c.server]) await runWrk(s, load, options.warmup, options.connections)
  const alone: Figures[] = []
  const together: { a: Figures; b: Figures }[] = []
  for (let i = 1; i <= options.rounds; i++) {
    alone.push(await runWrk(a.server, load, options.duration, options.connections))
    const [fa, fb] = await Promise.all([
      runWrk(a.server, load, options.duration, options.connections / 2),
      runWrk(c.server, load, options.duration, options.connections / 2),
    ])
    together.push({ a: fa, b: fb })
    log(
      `two instances round ${i}/${options.rounds}: one alone ${fmt(alone.at(-1)?.rps ?? 0)} req/s; both ${fmt(fa.rps)} + ${fmt(fb.rps)} req/s, CPU/req ${fmt(fa.cpuUsPerReq, 1)} and ${fmt(fb.cpuUsPerReq, 1)} µs`,
    )
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? Number.NaN
  const throughput = {
    aloneRps: med(alone.map((f) => f.rps)),
    aloneCpuUsPerReq: med(alone.map((f) => f.cpuUsPerReq)),
    bothRps: med(together.map((r) => r.a.rps + r.b.rps)),
    bothCpuUsPerReq: med(together.map((r) => (r.a.cpuUsPerReq + r.b.cpuUsPerReq) / 2)),
    bothP99Ms: med(together.map((r) => Math.max(r.a.p99Us, r.b.p99Us))) / 1000,
    errors: [...alone, ...together.flatMap((r) => [r.a, r.b])].reduce((n, f) => n + f.non2xx + f.socketErrors, 0),
    rounds: alone.map((f, i) => ({ alone: f, a: together[i]?.a, b: together[i]?.b })),
  }

  /** `count` requests spread over both instances, 32 at a time; their statuses. */
  const spread = async (count: number, send: (port: number, i: number) => Promise<number>) => {
    const statuses: number[] = []
    let next = 0
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < count) {
          const i = next++
          statuses.push(await send(both[i % 2] as number, i))
        }
      }),
    )
    const tally: Record<string, number> = {}
    for (const s of statuses) tally[s] = (tally[s] ?? 0) + 1
    return tally
  }
  const budget = await spread(
    1000,
    async (port) => (await request(port, { path: '/leads.json?limit=1', headers: { authorization: bearer } })).status,
  )
  const leads = await spread(100, async (port, i) => {
    const body = JSON.stringify({ name: `Anonymous ${i}`, email: `anon${i}@example.com`, phone: '+44 20 7946 0000', consent: true })
    return (
      await request(port, { method: 'POST', path: '/scripts/enquiry_backend.php', headers: { 'content-type': 'application/json' }, body })
    ).status
  })
  const guesses = await spread(100, async (port) => {
    const authorization = `Basic ${Buffer.from(`${CLIENT_ID}:${randomBytes(32).toString('base64url')}`).toString('base64')}`
    const body = 'grant_type=client_credentials'
    return (
      await request(port, {
        method: 'POST',
        path: '/api/token',
        headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
        body,
      })
    ).status
  })
  const keys = spawnSync('redis-cli', ['-p', String(redis.port), '--scan', '--pattern', `${shared.REDIS_PREFIX}*`], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter(Boolean)
  log(
    `two instances: getLeads 100/min ${JSON.stringify(budget)}; anonymous leads (10) ${JSON.stringify(leads)}; 100 wrong secrets (10) ${JSON.stringify(guesses)}; ${keys.length} Redis keys`,
  )
  const passed = budget[200] ?? 0
  const stored = leads[200] ?? 0
  const checked = guesses[401] ?? 0
  targets.push(
    {
      name: 'two instances: 1,000 requests against 100/min',
      target: '<= 105 through',
      value: `${passed} through`,
      pass: passed <= 105 && Object.keys(budget).every((s) => s === '200' || s === '429'),
    },
    {
      name: 'two instances: 100 anonymous leads against 10',
      target: '10 stored, the rest 429 (exact)',
      value: `${stored} stored`,
      pass: stored === 10 && leads[429] === 90,
    },
    {
      name: 'two instances: 100 concurrent wrong secrets against 10',
      target: '<= 10 checked (exact)',
      value: `${checked}`,
      pass: checked <= 10,
    },
    {
      name: 'Redis keys named <prefix>rl:<budget>:<caller>',
      target: 'none "undefined"',
      value: `${keys.filter((k) => k.includes('undefined')).length} of ${keys.length}`,
      pass: keys.length > 0 && !keys.some((k) => k.includes('undefined')),
    },
  )
  await Promise.all([stopServer(a.server), stopServer(c.server)])
  return { throughput, budget, anonymousLeads: leads, wrongSecrets: guesses, redisKeys: keys.length, sampleKeys: keys.slice(0, 5) }
}
