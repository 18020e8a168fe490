// Issue 21's benchmark: the scale-out mode of bench/run.ts (`npm run bench -- --redis`).
//   1. the same operations on three builds-in-configuration of the same dist/, interleaved in rounds
//      (run.ts's compare()): the embedded default (SQLite, counters in memory), SQLite with
//      REDIS_URL, PostgreSQL with REDIS_URL; submitLead also against bench/baseline-leads-pg.ts,
//      a naive endpoint committing one lead per transaction on the same PostgreSQL server (with a
//      pool of 10 connections, whose concurrent commits PostgreSQL flushes together, and with one
//      connection, whose commits each wait for their own flush). Every
//      row has the server's CPU per response, Redis' own CPU per response, and the rate limiter's
//      Redis calls per response (from the server's metrics);
//   2. two instances on PostgreSQL + Redis: getProjects on one alone, then on both at once; 1,000
//      requests spread over both against a budget of 100 per minute; the security budgets
//      (anonymous leads, failed client authentications) under concurrent requests over both;
//   3. Redis stopped for 5 s under load (getProjects and anonymous leads at once; every anonymous
//      lead waits for Redis to count it): frozen (SIGSTOP, the worst case: the connection stays
//      open and nothing answers), and killed then restarted; against the same load without one.
// The Redis server is one of the bench's own (a spare port, nothing on disk), so it can be stopped;
// the databases are created on the machine's PostgreSQL (--database, else DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/test) and dropped at the end. Writes bench/results-scale-out.json.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { closeSync, fstatSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeFileSync } from 'node:fs'
import * as os from 'node:os'
import { join, relative } from 'node:path'
import pg from 'pg'
import { privatePostgres } from './private-postgres.js'
import type { Bench, Contender, Figures, Load, OpResult, Server, Summary, Target } from './run.js'

interface RedisServer {
  port: number
  url: string
  pid(): number
  start(): Promise<void>
  kill(): Promise<void>
  freeze(): void
  thaw(): void
}

async function redisServer(b: Bench): Promise<RedisServer> {
  const port = await b.freePort()
  let child: ChildProcess | undefined
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: () => child?.pid ?? 0,
    async start() {
      child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: 'ignore',
      })
      b.track(child)
      for (let i = 0; i < 200; i++) {
        if (spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG') return
        await b.sleep(50)
      }
      throw new Error('redis-server did not start')
    },
    async kill() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return
      const c = child
      c.kill('SIGCONT')
      c.kill('SIGKILL')
      await once(c, 'exit')
    },
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  }
  await server.start()
  return server
}

/**
 * A metric from a server's /metrics listener, summed over the series whose labels contain
 * `label`; NaN when the server has no such metric (an older build).
 */
async function metric(b: Bench, port: number, name: string, label?: string): Promise<number> {
  const reply = await b.request(port, { path: '/metrics' })
  let sum = Number.NaN
  for (const line of reply.body.toString().split('\n')) {
    const m = /^(\w+)(\{[^}]*\})? (\S+)$/.exec(line)
    if (m?.[1] === name && (label === undefined || m[2]?.includes(label))) sum = (Number.isNaN(sum) ? 0 : sum) + Number(m[3])
  }
  return sum
}

interface Api {
  server: Server
  metricsPort: number
  bearer: string
}

interface Meter {
  requests: number
  redisCalls: number
}

export async function scaleOut(b: Bench): Promise<void> {
  const runs = (part: string) => b.only.has(part)
  b.log(`scale-out mode: wrk -t1 -c${b.connections}, ${b.rounds} rounds × ${b.duration} s after a ${b.warmup} s warm-up`)
  b.build()
  const tmp = mkdtempSync(join(os.tmpdir(), 'studio-bench-scale-'))
  // Also when the run is cut short (Ctrl-C, a failure: process.exit skips the finally below).
  const removeTmp = () => {
    if (!b.args.has('keep')) rmSync(tmp, { recursive: true, force: true, maxRetries: 5 })
  }
  process.on('exit', removeTmp)
  // --pg-flush-delay-us=N: a PostgreSQL of the bench's own whose WAL flushes take N µs longer.
  const flushDelayUs = Number(b.args.get('pg-flush-delay-us') ?? 0) || 0
  const slowPg = flushDelayUs > 0 ? await privatePostgres(b, flushDelayUs) : undefined
  const base = slowPg?.url ?? b.args.get('database') ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const tag = randomBytes(3).toString('hex')
  const databases: string[] = []
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  const database = async (name: string): Promise<string> => {
    const db = `studio_bench_${tag}_${name}`
    await admin.query(`create database ${db}`)
    databases.push(db)
    const url = new URL(base)
    url.pathname = `/${db}`
    return url.toString()
  }
  const redis = await redisServer(b)
  b.log(`redis-server of the bench on ${redis.port}; databases on ${new URL(base).host}`)
  const servers: (Server | undefined)[] = []
  const ops: Record<string, OpResult> = {}
  const meters: Record<string, Record<string, Meter>> = {}
  const results: Record<string, unknown> = {}
  const targets: Target[] = []
  let latency: CommitLatency | undefined

  const startApi = async (name: string, extra: Record<string, string>, bundle = b.serverJs): Promise<Api> => {
    const port = await b.freePort()
    const metricsPort = await b.freePort()
    const env = b.apiEnv(port, join(tmp, `${name}-data`), { METRICS_PORT: String(metricsPort), ...extra })
    const server = await b.startServer(name, [...b.apiFlags(name), bundle], env, port, join(b.benchDir, `api-${name}.log`), b.probe)
    servers.push(server)
    return { server, metricsPort, bearer: `Bearer ${await b.token(port)}` }
  }
  /** Requests answered and Redis calls of a server so far (deltas give per-request figures). */
  const meter = async (api: Api): Promise<Meter> => ({
    requests: await metric(b, api.metricsPort, 'studio_http_requests_total'),
    redisCalls: await metric(b, api.metricsPort, 'studio_rate_limit_redis_calls_total'),
  })
  /** Runs compare() and records, per server, the rate limiter's Redis calls per response over it. */
  const measure = async (op: string, contenders: (Omit<Contender, 'watch'> & { api?: Api })[]) => {
    const before = await Promise.all(contenders.map((c) => (c.api ? meter(c.api) : undefined)))
    // Redis' CPU is read around each run, so each server is charged for its own Redis work only.
    ops[op] = await b.compare(
      op,
      contenders.map((c) => ({ ...c, watch: redis.pid })),
    )
    const out: Record<string, Meter> = {}
    for (const [i, c] of contenders.entries()) {
      const from = before[i]
      if (!c.api || !from) continue
      const to = await meter(c.api)
      const n = to.requests - from.requests
      out[c.name] = { requests: n, redisCalls: (to.redisCalls - from.redisCalls) / n }
    }
    meters[op] = out
  }

  try {
    // 1. Side by side: the embedded default, SQLite + Redis, PostgreSQL + Redis.
    if (runs('getProjects') || runs('issueToken') || runs('submitLead')) {
      const embedded = await startApi('embedded', {})
      const withRedis = await startApi('redis', { REDIS_URL: redis.url, REDIS_PREFIX: `bench-${tag}-redis:` })
      const pgRedis = await startApi('pg-redis', {
        DATABASE_URL: await database('api'),
        REDIS_URL: redis.url,
        REDIS_PREFIX: `bench-${tag}-pg:`,
      })
      b.log(`servers: embedded ${embedded.server.port}, redis ${withRedis.server.port}, pg+redis ${pgRedis.server.port}`)
      const get = (api: Api): Load => ({ script: 'get', path: '/project_metadata.json', authorization: api.bearer })
      if (runs('getProjects')) {
        // --candidates="per-request=/path/dist/server.bundle.js;…": other builds with REDIS_URL in
        // the same rounds (e.g. the build before leases, which made a Redis call per request).
        const candidates: { name: string; api: Api; server: Server; load: Load }[] = []
        for (const spec of (b.args.get('candidates') ?? '').split(';').filter(Boolean)) {
          const [name = '', bundle = ''] = spec.split('=')
          const api = await startApi(name, { REDIS_URL: redis.url, REDIS_PREFIX: `bench-${tag}-${name}:` }, bundle)
          candidates.push({ name, api, server: api.server, load: get(api) })
        }
        await measure('getProjects', [
          { name: 'redis', api: withRedis, server: withRedis.server, load: get(withRedis) },
          { name: 'embedded', api: embedded, server: embedded.server, load: get(embedded) },
          { name: 'pg+redis', api: pgRedis, server: pgRedis.server, load: get(pgRedis) },
          ...candidates,
        ])
        await Promise.all(candidates.map((c) => b.stopServer(c.server)))
      }
      if (runs('issueToken')) {
        const load: Load = { script: 'issue-token', path: '/api/token', authorization: b.basic }
        await measure('issueToken', [
          { name: 'redis', api: withRedis, server: withRedis.server, load },
          { name: 'embedded', api: embedded, server: embedded.server, load },
          { name: 'pg+redis', api: pgRedis, server: pgRedis.server, load },
        ])
      }
      if (runs('submitLead')) {
        const naivePort = await b.freePort()
        const naive = await b.startServer(
          'naive-pg',
          [...b.tsxImport, join(b.benchDir, 'baseline-leads-pg.ts')],
          { PATH: process.env.PATH ?? '', PORT: String(naivePort), DATABASE_URL: await database('naive'), NODE_ENV: 'production' },
          naivePort,
          join(tmp, 'baseline-leads-pg.log'),
          '/',
        )
        servers.push(naive)
        // The same naive endpoint on one connection: its commits in series, one WAL flush each.
        const serialPort = await b.freePort()
        const serial = await b.startServer(
          'naive-pg-serial',
          [...b.tsxImport, join(b.benchDir, 'baseline-leads-pg.ts')],
          {
            PATH: process.env.PATH ?? '',
            PORT: String(serialPort),
            DATABASE_URL: await database('serial'),
            POOL_MAX: '1',
            NODE_ENV: 'production',
          },
          serialPort,
          join(tmp, 'baseline-leads-pg-serial.log'),
          '/',
        )
        servers.push(serial)
        const lead = (api: Api): Load => ({ script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: api.bearer })
        const naiveLoad: Load = { script: 'submit-lead', path: '/leads' }
        // What a commit costs on this machine decides how much batching can win: measured first.
        latency = await commitLatency(admin)
        results.commitLatency = latency
        b.log(
          `PostgreSQL commit latency (${latency.commits} in series, a row each): median ${b.fmt(latency.medianUs)} µs, p90 ${b.fmt(latency.p90Us)} µs`,
        )
        const counters = () => walCounters(admin)
        await measure('submitLead', [
          { name: 'pg+redis', api: pgRedis, server: pgRedis.server, load: lead(pgRedis), counters },
          { name: 'naive-pg', server: naive, load: naiveLoad, counters },
          { name: 'naive-pg-serial', server: serial, load: naiveLoad, counters },
          { name: 'embedded', api: embedded, server: embedded.server, load: lead(embedded) },
        ])
        await Promise.all([b.stopServer(naive), b.stopServer(serial)])
      }
      await Promise.all([embedded, withRedis, pgRedis].map((a) => b.stopServer(a.server)))
    }

    // 2. Two instances sharing PostgreSQL, Redis and their budgets.
    if (runs('twoInstances')) results.twoInstances = await twoInstances(b, redis, await database('two'), tmp, servers, targets)

    // 3. Redis stopped under load.
    if (runs('outage')) results.outage = await outage(b, redis, await database('outage'), tmp, servers, targets)
  } finally {
    await Promise.all(servers.map((s) => b.stopServer(s)))
    await redis.kill()
    for (const db of databases) await admin.query(`drop database if exists ${db} with (force)`).catch(() => {})
    await admin.end()
    await slowPg?.stop()
    process.off('exit', removeTmp)
    removeTmp()
  }

  targets.unshift(...sideBySideTargets(b, ops, latency, flushDelayUs))
  const out = {
    when: new Date().toISOString(),
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      node: process.version,
      redis: spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.trim(),
      loadAverageAfter: os.loadavg(),
    },
    settings: {
      generator: `${b.wrkVersion}: wrk -t1 -c${b.connections} -d${b.duration}s --timeout 10s --latency`,
      rounds: b.rounds,
      durationS: b.duration,
      rateLimits: b.rateLimits,
      ...(slowPg && { pgFlushDelayUs: flushDelayUs }),
    },
    notes: [
      'servers: the same dist/server.bundle.js; embedded = SQLite and in-memory counters, redis = SQLite + REDIS_URL, pg+redis = DATABASE_URL + REDIS_URL (a redis-server of the bench, the machine’s PostgreSQL); naive-pg = bench/baseline-leads-pg.ts (one INSERT per transaction, pool of 10), naive-pg-serial the same on one connection',
      'vs: the operation’s first server ÷ that one, medians of per-round ratios; cpuUsPerReq is the server’s CPU, watchedCpuUsPerReq redis-server’s during the same run (it serves only the server under load), both per response; redis.<op>.<server>.redisCalls: the rate limiter’s Redis calls per response (the server’s metrics) over warm-up and rounds',
      'budgets are raised out of the way (settings.rateLimits): a lease is 2 % of a budget, so the ordinary budgets cost a handful of Redis calls per window here; the failure budgets of issueToken are security budgets, a Redis call per request each',
    ],
    ops,
    redis: meters,
    ...results,
    targets,
    pass: targets.every((t) => t.pass !== false),
  }
  printTables(b, ops, meters, results, targets)
  const outFile = b.resultsFile('results-scale-out', out.when)
  const round = (_key: string, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v)
  writeFileSync(outFile, `${JSON.stringify(out, round, 2)}\n`)
  b.log(`wrote ${relative(b.root, outFile)}`)
}

/**
 * PostgreSQL's transactions and WAL so far, server-wide (the runs are one at a time, so a run's
 * changes are its own): transaction ids assigned (one per writing transaction; read at once,
 * unlike pg_stat_*, which backends report up to a second late) and WAL bytes inserted.
 */
const PG_XACTS = 'pg transactions'
const WAL_BYTES = 'wal bytes'

/** The CPU the rest of the machine (every process but the server and wrk) spent per response, µs. */
const othersUsPerReq = (s: Summary) => (s.otherCores / s.rps) * 1e6

async function walCounters(admin: pg.Client): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ xacts: string; wal: string }>(
    `select pg_snapshot_xmax(pg_current_snapshot())::text as xacts,
            pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text as wal`,
  )
  return { [PG_XACTS]: Number(rows[0]?.xacts), [WAL_BYTES]: Number(rows[0]?.wal) }
}

interface CommitLatency {
  commits: number
  medianUs: number
  p90Us: number
}

/** Durable one-row commits in series on the bench's PostgreSQL: what the naive endpoint pays per lead. */
async function commitLatency(admin: pg.Client, commits = 300): Promise<CommitLatency> {
  const table = `studio_bench_commit_probe_${randomBytes(3).toString('hex')}`
  await admin.query(`create table ${table} (n integer not null)`)
  try {
    const us: number[] = []
    for (let i = 0; i < commits; i++) {
      const t0 = performance.now()
      await admin.query(`insert into ${table} (n) values ($1)`, [i])
      us.push((performance.now() - t0) * 1000)
    }
    us.sort((a, b) => a - b)
    return { commits, medianUs: us[Math.floor(commits / 2)] ?? Number.NaN, p90Us: us[Math.floor(commits * 0.9)] ?? Number.NaN }
  } finally {
    await admin.query(`drop table ${table}`)
  }
}

/** A server's log from byte `from` on (the bench's servers log JSON lines). */
function logLinesFrom(file: string, from: number): Record<string, unknown>[] {
  const fd = openSync(file, 'r')
  try {
    const buffer = Buffer.alloc(fstatSync(fd).size - from)
    readSync(fd, buffer, 0, buffer.length, from)
    return buffer
      .toString('utf8')
      .split('\n')
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>]
        } catch {
          return [] // not a log line (a line cut short, something the process printed)
        }
      })
  } finally {
    closeSync(fd)
  }
}

/**
 * The requests the server itself took over 50 ms for (its request log's `ms`), split by whether
 * they overlapped the outage (from its start to 2 s after Redis was back, the time to rejoin) or
 * not: a slow response outside it is not Redis' doing (a batch's commit, a pause of the machine).
 */
function slowRequests(file: string, from: number, window: { from: number; to: number }) {
  const slow = logLinesFrom(file, from).filter((o) => o.msg === 'request' && typeof o.ms === 'number' && o.ms > 50)
  const out = { duringOrJustAfter: 0, outside: 0, slowestDuringMs: 0, slowestOutsideMs: 0 }
  for (const o of slow) {
    const end = o.time as number
    const ms = o.ms as number
    if (end >= window.from && end - ms <= window.to + 2000) {
      out.duringOrJustAfter++
      out.slowestDuringMs = Math.max(out.slowestDuringMs, ms)
    } else {
      out.outside++
      out.slowestOutsideMs = Math.max(out.slowestOutsideMs, ms)
    }
  }
  return out
}

/** Two instances on one database, one Redis, one set of secrets and budgets. */
async function twoInstances(
  b: Bench,
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
    const port = await b.freePort()
    const metricsPort = await b.freePort()
    const env = b.apiEnv(port, join(tmp, `${name}-data`), { ...shared, METRICS_PORT: String(metricsPort) })
    const server = await b.startServer(name, [b.serverJs], env, port, join(b.benchDir, `api-${name}.log`), b.probe)
    servers.push(server)
    return { server, metricsPort }
  }
  const a = await start('two-a')
  const c = await start('two-b')
  const bearer = `Bearer ${await b.token(a.server.port)}`
  const both = [a.server.port, c.server.port]
  b.log(`two instances: ${both.join(' and ')} (PostgreSQL + Redis, one budget)`)

  // Throughput: one instance with all connections, then both at once with half each.
  const load: Load = { script: 'get', path: '/project_metadata.json', authorization: bearer }
  for (const s of [a.server, c.server]) await b.runWrk(s, load, b.warmup)
  const alone: Figures[] = []
  const together: { a: Figures; b: Figures }[] = []
  for (let i = 1; i <= b.rounds; i++) {
    alone.push(await b.runWrk(a.server, load, b.duration))
    const [fa, fb] = await Promise.all([
      b.runWrk(a.server, load, b.duration, b.connections / 2),
      b.runWrk(c.server, load, b.duration, b.connections / 2),
    ])
    together.push({ a: fa, b: fb })
    b.log(
      `two instances round ${i}/${b.rounds}: one alone ${b.fmt(alone.at(-1)?.rps ?? 0)} req/s; both ${b.fmt(fa.rps)} + ${b.fmt(fb.rps)} req/s, CPU/req ${b.fmt(fa.cpuUsPerReq, 1)} and ${b.fmt(fb.cpuUsPerReq, 1)} µs`,
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
    async (port) => (await b.request(port, { path: '/leads.json?limit=1', headers: { authorization: bearer } })).status,
  )
  const leads = await spread(100, async (port, i) => {
    const body = JSON.stringify({ name: `Anonymous ${i}`, email: `anon${i}@example.com`, phone: '+44 20 7946 0000', consent: true })
    return (
      await b.request(port, { method: 'POST', path: '/scripts/enquiry_backend.php', headers: { 'content-type': 'application/json' }, body })
    ).status
  })
  const guesses = await spread(100, async (port) => {
    const authorization = `Basic ${Buffer.from(`${b.clientId}:${randomBytes(32).toString('base64url')}`).toString('base64')}`
    const body = 'grant_type=client_credentials'
    return (
      await b.request(port, {
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
  b.log(
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
  await Promise.all([b.stopServer(a.server), b.stopServer(c.server)])
  return { throughput, budget, anonymousLeads: leads, wrongSecrets: guesses, redisKeys: keys.length, sampleKeys: keys.slice(0, 5) }
}

/**
 * getProjects and anonymous submitLead at once (4 connections each) for 15 s; Redis frozen or
 * killed from 5 s to 10 s.
 * Anonymous leads are a security budget (raised out of the way here): every one of them waits for
 * Redis to count it, the worst case for a request's latency when Redis is in trouble.
 */
async function outage(b: Bench, redis: RedisServer, databaseUrl: string, tmp: string, servers: (Server | undefined)[], targets: Target[]) {
  const port = await b.freePort()
  const metricsPort = await b.freePort()
  const env = b.apiEnv(port, join(tmp, 'outage-data'), {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    REDIS_PREFIX: `bench-outage-${randomBytes(2).toString('hex')}:`,
    METRICS_PORT: String(metricsPort),
    LEADS_ALLOW_ANONYMOUS: 'true',
    RATE_LIMITS: `${b.rateLimits}, submitLeadAnonymous=100000000`,
  })
  const logFile = join(b.benchDir, 'api-outage.log')
  const server = await b.startServer('outage', [b.serverJs], env, port, logFile, b.probe)
  servers.push(server)
  const bearer = `Bearer ${await b.token(port)}`
  const projects: Load = { script: 'get', path: '/project_metadata.json', authorization: bearer }
  const leads: Load = { script: 'submit-lead', path: '/scripts/enquiry_backend.php', consent: true }
  await b.runWrk(server, projects, b.warmup)
  await b.runWrk(server, leads, b.warmup)
  const SECONDS = 15
  const waitedOver = async (seconds: number) => {
    const n = (await metric(b, metricsPort, 'studio_rate_limit_redis_wait_seconds_count')) || 0
    return n - ((await metric(b, metricsPort, 'studio_rate_limit_redis_wait_seconds_bucket', `le="${seconds}"`)) || 0)
  }
  const scenario = async (name: string, from: () => unknown, to: () => unknown) => {
    const orZero = (x: number) => (Number.isNaN(x) ? 0 : x)
    const m = async () => ({
      answered: orZero(await metric(b, metricsPort, 'studio_rate_limit_redis_wait_seconds_count', 'outcome="answered"')),
      timedOut: orZero(await metric(b, metricsPort, 'studio_rate_limit_redis_wait_seconds_count', 'outcome="timed_out"')),
      // Requests that waited longer than 50 ms for Redis (answered or not): all but the 50 ms bucket.
      over50: await waitedOver(0.05),
      fallbacks: await metric(b, metricsPort, 'studio_rate_limit_local_fallbacks_total'),
      // The server's own count of its answers: wrk counts every status over 399 alike.
      status5xx: orZero(await metric(b, metricsPort, 'studio_http_requests_total', 'status="5')),
      status429: orZero(await metric(b, metricsPort, 'studio_http_requests_total', 'status="429"')),
    })
    const before = await m()
    const logFrom = statSync(logFile).size
    const window = { from: Number.NaN, to: Number.NaN }
    const timers = [
      setTimeout(() => {
        window.from = Date.now()
        from()
      }, 5000),
      setTimeout(() => {
        window.to = Date.now()
        to()
      }, 10_000),
    ]
    // Few connections, so the server is not saturated and a request's latency is its own work,
    // not a queue: what Redis adds shows.
    const [p, l] = await Promise.all([b.runWrk(server, projects, SECONDS, 4), b.runWrk(server, leads, SECONDS, 4)])
    for (const timer of timers) clearTimeout(timer)
    await b.sleep(2000)
    const after = await m()
    const shared = await metric(b, metricsPort, 'studio_rate_limit_shared')
    const row = {
      getProjects: pick(p),
      anonymousLeads: pick(l),
      waitsAnswered: after.answered - before.answered,
      waitsTimedOut: after.timedOut - before.timedOut,
      waitsOver50Ms: after.over50 - before.over50,
      status5xx: after.status5xx - before.status5xx,
      status429: after.status429 - before.status429,
      localFallbacks: after.fallbacks - before.fallbacks,
      sharedAfter: shared,
      slowRequests: slowRequests(logFile, logFrom, window),
    }
    b.log(`outage ${name}: ${JSON.stringify(row)}`)
    return row
  }
  const pick = (f: Figures) => ({
    requests: f.requests,
    non2xx: f.non2xx,
    socketErrors: f.socketErrors,
    rps: Math.round(f.rps),
    p50Ms: f.p50Us / 1000,
    p99Ms: f.p99Us / 1000,
    maxMs: f.maxUs / 1000,
  })
  const control = await scenario(
    'none (control)',
    () => {},
    () => {},
  )
  const frozen = await scenario(
    'SIGSTOP 5 s',
    () => redis.freeze(),
    () => redis.thaw(),
  )
  const killed = await scenario(
    'killed, restarted after 5 s',
    () => redis.kill(),
    () => redis.start(),
  )
  await b.stopServer(server)
  for (const [name, row] of [
    ['frozen', frozen],
    ['killed', killed],
  ] as const) {
    const socketErrors = row.getProjects.socketErrors + row.anonymousLeads.socketErrors
    const worst = Math.max(row.getProjects.maxMs, row.anonymousLeads.maxMs)
    const controlWorst = Math.max(control.getProjects.maxMs, control.anonymousLeads.maxMs)
    targets.push({
      name: `Redis ${name} 5 s under load (slowest response without an outage: ${b.fmt(controlWorst, 1)} ms)`,
      target: 'no 5xx or socket error; no request waited for Redis over 50 ms; shared again after',
      value: `${row.status5xx} 5xx, ${socketErrors} socket errors, ${row.status429} 429; ${row.waitsOver50Ms} waited over 50 ms (${row.waitsTimedOut} gave up waiting at REDIS_WAIT_MS); slowest response ${b.fmt(worst, 1)} ms; over 50 ms by the server's log: ${row.slowRequests.duringOrJustAfter} during the outage or the 2 s after it${row.slowRequests.duringOrJustAfter ? ` (slowest ${b.fmt(row.slowRequests.slowestDuringMs, 1)} ms)` : ''}, ${row.slowRequests.outside} outside it${row.slowRequests.outside ? ` (slowest ${b.fmt(row.slowRequests.slowestOutsideMs, 1)} ms)` : ''}; counted locally ${row.localFallbacks}×, shared again after: ${row.sharedAfter === 1 ? 'yes' : 'no'}`,
      pass: row.status5xx === 0 && socketErrors === 0 && row.waitsOver50Ms === 0 && row.sharedAfter === 1,
    })
  }
  return { seconds: SECONDS, outageFromS: 5, outageToS: 10, control, frozen, killed }
}

function sideBySideTargets(b: Bench, ops: Record<string, OpResult>, latency: CommitLatency | undefined, flushDelayUs: number): Target[] {
  const out: Target[] = []
  const clean = (s: Summary | undefined) => s !== undefined && s.non2xx === 0 && s.socketErrors === 0
  const g = ops.getProjects
  if (g) {
    const vs = g.vs.embedded?.rps ?? Number.NaN
    const redis = g.servers.redis
    out.push(
      {
        name: 'getProjects with REDIS_URL ÷ without (same build)',
        target: '>= 0.85x',
        value: `${b.fmt(vs, 2)}x (${b.fmt(redis?.rps ?? Number.NaN)} vs ${b.fmt(g.servers.embedded?.rps ?? Number.NaN)} req/s)`,
        pass: vs >= 0.85 && clean(redis) && clean(g.servers.embedded),
      },
      {
        name: 'getProjects with REDIS_URL: p99',
        target: '< 10 ms',
        value: `${b.ms(redis?.p99Us ?? Number.NaN)} ms`,
        pass: (redis?.p99Us ?? Number.POSITIVE_INFINITY) < 10_000 && clean(redis),
      },
    )
  }
  const s = ops.submitLead
  if (s) {
    const vs = s.vs['naive-pg']?.rps ?? Number.NaN
    out.push({
      name: `submitLead on PostgreSQL ÷ naive (one transaction per lead)${flushDelayUs ? `, every WAL flush +${flushDelayUs} µs (the shim)` : ''}`,
      target: '>= 1.5x',
      value: `${b.fmt(vs, 2)}x (${b.fmt(s.servers['pg+redis']?.rps ?? Number.NaN)} vs ${b.fmt(s.servers['naive-pg']?.rps ?? Number.NaN)} req/s)`,
      pass: vs >= 1.5 && clean(s.servers['pg+redis']) && clean(s.servers['naive-pg']),
    })
    // What 1.5× would take of this machine: the API's own CPU per lead that one event loop could
    // afford at 1.5× the naive endpoint's rate, and every process's CPU per lead at that rate.
    const api = s.servers['pg+redis']
    const naive = s.servers['naive-pg']
    if (api && naive) {
      const goal = 1.5 * naive.rps
      const cores = (goal * (api.cpuUsPerReq + othersUsPerReq(api) + api.wrkCpuUsPerReq)) / 1e6
      out.push({
        name: 'submitLead: what 1.5x the naive endpoint would take here',
        target: 'information',
        value:
          `${b.fmt(goal)} leads/s: at most ${b.fmt(1e6 / goal, 1)} µs of the API's CPU per lead on one core ` +
          `(it spent ${b.fmt(api.cpuUsPerReq, 1)}, the naive endpoint ${b.fmt(naive.cpuUsPerReq, 1)}); ` +
          `${b.fmt(cores, 2)} of ${os.cpus().length} cores at this run's CPU per lead (API, rest of the machine, wrk); ` +
          `a commit in series ${latency ? b.fmt(latency.medianUs) : '-'} µs`,
        pass: null,
      })
    }
  }
  return out
}

function printTables(
  b: Bench,
  ops: Record<string, OpResult>,
  meters: Record<string, Record<string, Meter>>,
  results: Record<string, unknown>,
  targets: Target[],
): void {
  const rows = [
    [
      'operation',
      'server',
      'req/s',
      'first÷',
      'µs CPU/req',
      'others µs/req',
      'redis µs/req',
      'redis calls/req',
      'pg xacts/req',
      'wal B/req',
      'p50 ms',
      'p99 ms',
      'max ms',
      'errors',
    ],
  ]
  for (const [op, r] of Object.entries(ops)) {
    for (const [name, s] of Object.entries(r.servers)) {
      const m = meters[op]?.[name]
      rows.push([
        op,
        name,
        b.fmt(s.rps),
        r.vs[name] ? `${b.fmt(r.vs[name].rps, 2)}x` : '',
        b.fmt(s.cpuUsPerReq, 1),
        b.fmt(othersUsPerReq(s), 1),
        b.fmt(s.watchedCpuUsPerReq, 1),
        m ? b.fmt(m.redisCalls, 4) : '',
        s.counted[PG_XACTS] === undefined ? '' : b.fmt(s.counted[PG_XACTS], 3),
        s.counted[WAL_BYTES] === undefined ? '' : b.fmt(s.counted[WAL_BYTES]),
        b.ms(s.p50Us),
        b.ms(s.p99Us),
        b.ms(s.maxUs, 1),
        String(s.non2xx + s.socketErrors),
      ])
    }
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  const out = ['', 'Scale-out: the same build embedded, with Redis, with PostgreSQL + Redis (medians of the rounds)', '']
  for (const r of rows) out.push(r.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  '))
  const two = results.twoInstances as { throughput: Record<string, number> } | undefined
  if (two) {
    const { aloneRps, aloneCpuUsPerReq, bothRps, bothCpuUsPerReq, bothP99Ms, errors } = two.throughput
    out.push(
      '',
      `two instances, getProjects: one alone ${b.fmt(aloneRps ?? 0)} req/s (${b.fmt(aloneCpuUsPerReq ?? 0, 1)} µs CPU/req); both at once ${b.fmt(bothRps ?? 0)} req/s (${b.fmt(bothCpuUsPerReq ?? 0, 1)} µs CPU/req, p99 ${b.fmt(bothP99Ms ?? 0, 2)} ms); errors ${errors}`,
    )
  }
  const outage = results.outage as Record<string, unknown> | undefined
  if (outage) for (const k of ['control', 'frozen', 'killed']) out.push(`outage ${k}: ${JSON.stringify(outage[k])}`)
  out.push('')
  for (const t of targets) out.push(`${t.pass === null ? ' -- ' : t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value}  (target ${t.target})`)
  out.push('')
  process.stdout.write(`${out.join('\n')}\n`)
}
