// The scale-out mode (`npm run bench -- --redis`), issue 21's benchmark:
//   1. the same operations on three builds-in-configuration of the same dist/, interleaved in rounds
//      (bench/lib/compare.ts): the embedded default (SQLite, counters in memory), SQLite with
//      REDIS_URL, PostgreSQL with REDIS_URL; submitLead also against bench/baselines/leads-pg.ts,
//      a naive endpoint committing one lead per transaction on the same PostgreSQL server (with a
//      pool of 10 connections, whose concurrent commits PostgreSQL flushes together, and with one
//      connection, whose commits each wait for their own flush). Every row has the server's CPU
//      per response, Redis' own CPU per response, and the rate limiter's Redis calls per response
//      (from the server's metrics);
//   2. two instances on PostgreSQL + Redis (two-instances.ts);
//   3. Redis stopped for 5 s under load (outage.ts).
// The Redis server is one of the bench's own (redis.ts), so it can be stopped; the databases are
// created on the machine's PostgreSQL (--database, else DATABASE_URL, else
// postgres://postgres@127.0.0.1:5432/test) and dropped at the end; --pg-flush-delay-us=N runs them
// on a PostgreSQL of the bench's own instead (private-postgres.ts). Writes bench/results/scale-out.json.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import * as os from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { BASIC, RATE_LIMITS, startApi, token } from '../../lib/api.js'
import { build } from '../../lib/build.js'
import { compare } from '../../lib/compare.js'
import { fmt } from '../../lib/format.js'
import { log } from '../../lib/log.js'
import { baselinesDir, benchDir, tsxImport } from '../../lib/paths.js'
import { freePort, startServer, stopServer } from '../../lib/processes.js'
import { writeResults } from '../../lib/results.js'
import type { Contender, Load, OpResult, Options, Server, Target } from '../../lib/types.js'
import { wrkVersion } from '../../lib/wrk.js'
import { outage } from './outage.js'
import { type CommitLatency, commitLatency, walCounters } from './postgres.js'
import { privatePostgres } from './private-postgres.js'
import { metric, redisServer } from './redis.js'
import { type Meter, printTables, sideBySideTargets } from './report.js'
import { twoInstances } from './two-instances.js'

interface Api {
  server: Server
  metricsPort: number
  bearer: string
}

export async function scaleOut(options: Options): Promise<void> {
  const runs = (part: string) => options.only.has(part)
  log(
    `scale-out mode: wrk -t1 -c${options.connections}, ${options.rounds} rounds × ${options.duration} s after a ${options.warmup} s warm-up`,
  )
  build(options)
  const tmp = mkdtempSync(join(os.tmpdir(), 'studio-bench-scale-'))
  // Also when the run is cut short (Ctrl-C, a failure: process.exit skips the finally below).
  const removeTmp = () => {
    if (!options.keep) rmSync(tmp, { recursive: true, force: true, maxRetries: 5 })
  }
  process.on('exit', removeTmp)
  // --pg-flush-delay-us=N: a PostgreSQL of the bench's own whose WAL flushes take N µs longer.
  const flushDelayUs = Number(options.args.get('pg-flush-delay-us') ?? 0) || 0
  const slowPg = flushDelayUs > 0 ? await privatePostgres(flushDelayUs) : undefined
  const base = slowPg?.url ?? options.args.get('database') ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
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
  const redis = await redisServer()
  log(`redis-server of the bench on ${redis.port}; databases on ${new URL(base).host}`)
  const servers: (Server | undefined)[] = []
  const ops: Record<string, OpResult> = {}
  const meters: Record<string, Record<string, Meter>> = {}
  const results: Record<string, unknown> = {}
  const targets: Target[] = []
  let latency: CommitLatency | undefined

  const startInstance = async (name: string, extra: Record<string, string>, bundle = options.serverJs): Promise<Api> => {
    const port = await freePort()
    const metricsPort = await freePort()
    const server = await startApi(options, name, join(tmp, `${name}-data`), port, join(benchDir, `api-${name}.log`), {
      script: bundle,
      extra: { METRICS_PORT: String(metricsPort), ...extra },
    })
    servers.push(server)
    return { server, metricsPort, bearer: `Bearer ${await token(port)}` }
  }
  /** Requests answered and Redis calls of a server so far (deltas give per-request figures). */
  const meter = async (api: Api): Promise<Meter> => ({
    requests: await metric(api.metricsPort, 'studio_http_requests_total'),
    redisCalls: await metric(api.metricsPort, 'studio_rate_limit_redis_calls_total'),
  })
  /** Runs compare() and records, per server, the rate limiter's Redis calls per response over it. */
  const measure = async (op: string, contenders: (Omit<Contender, 'watch'> & { api?: Api })[]) => {
    const before = await Promise.all(contenders.map((c) => (c.api ? meter(c.api) : undefined)))
    // Redis' CPU is read around each run, so each server is charged for its own Redis work only.
    ops[op] = await compare(
      options,
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
      const embedded = await startInstance('embedded', {})
      const withRedis = await startInstance('redis', { REDIS_URL: redis.url, REDIS_PREFIX: `bench-${tag}-redis:` })
      const pgRedis = await startInstance('pg-redis', {
        DATABASE_URL: await database('api'),
        REDIS_URL: redis.url,
        REDIS_PREFIX: `bench-${tag}-pg:`,
      })
      log(`servers: embedded ${embedded.server.port}, redis ${withRedis.server.port}, pg+redis ${pgRedis.server.port}`)
      const get = (api: Api): Load => ({ script: 'get', path: '/project_metadata.json', authorization: api.bearer })
      if (runs('getProjects')) {
        // --candidates="per-request=/path/dist/server.bundle.js;…": other builds with REDIS_URL in
        // the same rounds (e.g. the build before leases, which made a Redis call per request).
        const candidates: { name: string; api: Api; server: Server; load: Load }[] = []
        for (const spec of (options.args.get('candidates') ?? '').split(';').filter(Boolean)) {
          const [name = '', bundle = ''] = spec.split('=')
          const api = await startInstance(name, { REDIS_URL: redis.url, REDIS_PREFIX: `bench-${tag}-${name}:` }, bundle)
          candidates.push({ name, api, server: api.server, load: get(api) })
        }
        await measure('getProjects', [
          { name: 'redis', api: withRedis, server: withRedis.server, load: get(withRedis) },
          { name: 'embedded', api: embedded, server: embedded.server, load: get(embedded) },
          { name: 'pg+redis', api: pgRedis, server: pgRedis.server, load: get(pgRedis) },
          ...candidates,
        ])
        await Promise.all(candidates.map((c) => stopServer(c.server)))
      }
      if (runs('issueToken')) {
        const load: Load = { script: 'issue-token', path: '/api/token', authorization: BASIC }
        await measure('issueToken', [
          { name: 'redis', api: withRedis, server: withRedis.server, load },
          { name: 'embedded', api: embedded, server: embedded.server, load },
          { name: 'pg+redis', api: pgRedis, server: pgRedis.server, load },
        ])
      }
      if (runs('submitLead')) {
        const naivePort = await freePort()
        const naive = await startServer({
          name: 'naive-pg',
          nodeArgs: [...tsxImport, join(baselinesDir, 'leads-pg.ts')],
          env: {
            PATH: process.env.PATH ?? '',
            PORT: String(naivePort),
            DATABASE_URL: await database('naive'),
            NODE_ENV: 'production',
            ...options.childEnv,
          },
          port: naivePort,
          logFile: join(tmp, 'baseline-leads-pg.log'),
          probe: '/',
        })
        servers.push(naive)
        // The same naive endpoint on one connection: its commits in series, one WAL flush each.
        const serialPort = await freePort()
        const serial = await startServer({
          name: 'naive-pg-serial',
          nodeArgs: [...tsxImport, join(baselinesDir, 'leads-pg.ts')],
          env: {
            PATH: process.env.PATH ?? '',
            PORT: String(serialPort),
            DATABASE_URL: await database('serial'),
            POOL_MAX: '1',
            NODE_ENV: 'production',
            ...options.childEnv,
          },
          port: serialPort,
          logFile: join(tmp, 'baseline-leads-pg-serial.log'),
          probe: '/',
        })
        servers.push(serial)
        const lead = (api: Api): Load => ({ script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: api.bearer })
        const naiveLoad: Load = { script: 'submit-lead', path: '/leads' }
        // What a commit costs on this machine decides how much batching can win: measured first.
        latency = await commitLatency(admin)
        results.commitLatency = latency
        log(
          `PostgreSQL commit latency (${latency.commits} in series, a row each): median ${fmt(latency.medianUs)} µs, p90 ${fmt(latency.p90Us)} µs`,
        )
        const counters = () => walCounters(admin)
        await measure('submitLead', [
          { name: 'pg+redis', api: pgRedis, server: pgRedis.server, load: lead(pgRedis), counters },
          { name: 'naive-pg', server: naive, load: naiveLoad, counters },
          { name: 'naive-pg-serial', server: serial, load: naiveLoad, counters },
          { name: 'embedded', api: embedded, server: embedded.server, load: lead(embedded) },
        ])
        await Promise.all([stopServer(naive), stopServer(serial)])
      }
      await Promise.all([embedded, withRedis, pgRedis].map((a) => stopServer(a.server)))
    }

    // 2. Two instances sharing PostgreSQL, Redis and their budgets.
    if (runs('twoInstances')) results.twoInstances = await twoInstances(options, redis, await database('two'), tmp, servers, targets)

    // 3. Redis stopped under load.
    if (runs('outage')) results.outage = await outage(options, redis, await database('outage'), tmp, servers, targets)
  } finally {
    await Promise.all(servers.map((s) => stopServer(s)))
    await redis.kill()
    for (const db of databases) await admin.query(`drop database if exists ${db} with (force)`).catch(() => {})
    await admin.end()
    await slowPg?.stop()
    process.off('exit', removeTmp)
    removeTmp()
  }

  targets.unshift(...sideBySideTargets(ops, latency, flushDelayUs))
  const when = new Date().toISOString()
  const out = {
    when,
    machine: {
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      node: process.version,
      redis: spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout?.trim(),
      loadAverageAfter: os.loadavg(),
    },
    settings: {
      generator: `${wrkVersion()}: wrk -t1 -c${options.connections} -d${options.duration}s --timeout 10s --latency`,
      rounds: options.rounds,
      durationS: options.duration,
      rateLimits: RATE_LIMITS,
      ...(slowPg && { pgFlushDelayUs: flushDelayUs }),
    },
    notes: [
      'servers: the same dist/server.bundle.js; embedded = SQLite and in-memory counters, redis = SQLite + REDIS_URL, pg+redis = DATABASE_URL + REDIS_URL (a redis-server of the bench, the machine’s PostgreSQL); naive-pg = bench/baselines/leads-pg.ts (one INSERT per transaction, pool of 10), naive-pg-serial the same on one connection',
      'vs: the operation’s first server ÷ that one, medians of per-round ratios; cpuUsPerReq is the server’s CPU, watchedCpuUsPerReq redis-server’s during the same run (it serves only the server under load), both per response; redis.<op>.<server>.redisCalls: the rate limiter’s Redis calls per response (the server’s metrics) over warm-up and rounds',
      'budgets are raised out of the way (settings.rateLimits): a lease is 2 % of a budget, so the ordinary budgets cost a handful of Redis calls per window here; the failure budgets of issueToken are security budgets, a Redis call per request each',
    ],
    ops,
    redis: meters,
    ...results,
    targets,
    pass: targets.every((t) => t.pass !== false),
  }
  printTables(ops, meters, results, targets)
  writeResults(options, out, when)
}
