// The default run (`npm run bench`), issue 5's benchmark:
//   1. builds (npm run build) and starts the API from dist/ (embedded SQLite, LOG_LEVEL=info to
//      bench/api.log, fresh DATA_DIR, rate limits raised, known bootstrap client), timing start-up
//      (spawn to first answered request) and sampling its idle RSS;
//   2. starts the baselines each part needs (bench/baselines/): http.ts (bare node:http) and
//      fastify.ts (getProjects hand-wired in Fastify, verifying the API's tokens) for getProjects;
//      leads.ts (naive durable) and a second API with fsync off for submitLead;
//   3. drives each operation with wrk (bench/lib/wrk.ts), a warm-up per server, then N rounds of
//      (API, baselines) interleaved (bench/lib/compare.ts);
//   4. a memory run: a separate API on a 100,000-lead log, GET /leads.json while sampling RSS
//      (memory.ts);
//   5. prints a table and writes bench/results/default.json (figures, ratios, targets, pass/fail).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import * as os from 'node:os'
import { join, relative } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { BASIC, countRows, mcpInitializeMs, PROBE, seedViaApi, startApi, token } from '../../lib/api.js'
import { build } from '../../lib/build.js'
import { compare, generatorWarnings } from '../../lib/compare.js'
import { fmt, MB, mb } from '../../lib/format.js'
import { log } from '../../lib/log.js'
import { CLK_TCK, fsyncProbe, idleRss } from '../../lib/measure.js'
import { baselinesDir, benchDir, root, tsxImport } from '../../lib/paths.js'
import { freePort, request, type ServerSpec, startServer, stopServer, tail } from '../../lib/processes.js'
import { writeResults } from '../../lib/results.js'
import type { FsyncProbe, OpResult, Options, Server, Target } from '../../lib/types.js'
import { WRK, wrkVersion } from '../../lib/wrk.js'
import { memoryRun } from './memory.js'
import { operationTargets, printTables } from './report.js'

/** getLeads reads a log of exactly this many leads (seeded before submitLead adds more). */
const LOG_SEED = 1000

/** A baseline from bench/baselines/, through tsx, with --child-env. */
function startBaseline(options: Options, spec: Omit<ServerSpec, 'probe' | 'nodeArgs'> & { source: string }): Promise<Server> {
  const { source, ...rest } = spec
  return startServer({
    ...rest,
    nodeArgs: [...tsxImport, join(baselinesDir, source)],
    env: { ...spec.env, ...options.childEnv },
    probe: '/',
  })
}

export async function defaultRun(options: Options): Promise<void> {
  const { connections, rounds, duration, warmup, childEnv } = options
  const runs = (part: string) => options.only.has(part)
  const version = wrkVersion()
  log(`load generator: ${WRK} (${version}), -t1 -c${connections}, ${rounds} rounds × ${duration} s after a ${warmup} s warm-up`)
  build(options)

  const loadBefore = os.loadavg()
  if ((loadBefore[0] ?? 0) > 0.5)
    log(`WARNING: load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}: other work is running; figures will be noisy`)
  const tmp = mkdtempSync(join(os.tmpdir(), 'studio-bench-'))
  log(`temp folder ${tmp}`)
  const results: Record<string, unknown> = {}
  const fsync: Record<string, FsyncProbe> = { start: fsyncProbe(tmp) }
  results.fsync = fsync
  log(`disk: 4 KiB write + fdatasync p50 ${fmt(fsync.start?.p50Us ?? Number.NaN)} µs, p99 ${fmt(fsync.start?.p99Us ?? Number.NaN)} µs`)
  const ops: Record<string, OpResult> = {}
  const targets: Target[] = []
  const servers: (Server | undefined)[] = []

  try {
    // 2. The API, fresh data dir.
    const apiPort = await freePort()
    const api = await startApi(options, 'api', join(tmp, 'api-data'), apiPort, join(benchDir, 'api.log'))
    servers.push(api)
    log(`api started: first answered request ${fmt(api.startupMs)} ms after spawn (pid ${api.pid}, log ${relative(root, api.logFile)})`)
    log('api idle: sampling RSS until V8 settles (up to 60 s)')
    const idle = await idleRss(api.pid)
    log(
      `api idle RSS ${mb(idle.early)} MB 2 s after start-up; ${mb(idle.settled)} MB settled${idle.settledAtMs === undefined ? ' (no drop within 60 s)' : ` (after ${fmt(idle.settledAtMs / 1000, 1)} s)`}`,
    )
    // The MCP SDK loads on the first request to /mcp (after the idle reading, which is of an API
    // no agent has talked to yet): what that first agent waits, beside the next one.
    const mcp = { first: await mcpInitializeMs(apiPort), second: await mcpInitializeMs(apiPort) }
    log(`api /mcp initialize: first ${fmt(mcp.first)} ms (loads the MCP SDK), then ${fmt(mcp.second)} ms`)
    const bearer = `Bearer ${await token(apiPort)}`

    // 3. Operations, each: warm-up, then rounds of (API, baselines).
    if (runs('getProjects')) {
      const catalogue = await request(apiPort, { path: '/project_metadata.json', headers: { authorization: bearer } })
      if (catalogue.status !== 200) throw new Error(`catalogue: ${catalogue.status} ${catalogue.body.toString()}`)
      const catalogueFile = join(tmp, 'catalogue.json')
      writeFileSync(catalogueFile, catalogue.body)
      // The hand-wired baseline verifies the API's tokens: the API's published key, its issuer.
      const jwks = await request(apiPort, { path: '/.well-known/jwks.json' })
      const meta = await request(apiPort, { path: PROBE })
      if (jwks.status !== 200 || meta.status !== 200) throw new Error(`jwks ${jwks.status} / metadata ${meta.status}`)
      const jwksFile = join(tmp, 'jwks.json')
      writeFileSync(jwksFile, jwks.body)
      const issuer = (JSON.parse(meta.body.toString()) as { issuer: string }).issuer
      log(`catalogue: ${catalogue.body.length} bytes; issuer ${issuer}`)

      const httpPort = await freePort()
      const bareHttp = await startBaseline(options, {
        name: 'node:http',
        source: 'http.ts',
        env: { PATH: process.env.PATH ?? '', PORT: String(httpPort), BODY_FILE: catalogueFile },
        port: httpPort,
        logFile: join(tmp, 'baseline-http.log'),
      })
      servers.push(bareHttp)
      const fastifyPort = await freePort()
      const fastify = await startBaseline(options, {
        name: 'fastify',
        source: 'fastify.ts',
        env: {
          PATH: process.env.PATH ?? '',
          NODE_ENV: 'production',
          PORT: String(fastifyPort),
          CATALOGUE_FILE: catalogueFile,
          JWKS_FILE: jwksFile,
          ISSUER: issuer,
          LOG_FILE: join(tmp, 'baseline-fastify-requests.log'),
        },
        port: fastifyPort,
        logFile: join(tmp, 'baseline-fastify.log'),
      })
      servers.push(fastify)
      // Same catalogue from all three: bare node:http the same bytes, Fastify the same JSON
      // (its serializer may order or space it differently), with the API's token.
      const same = await request(httpPort, { path: '/project_metadata.json' })
      if (!same.body.equals(catalogue.body)) throw new Error('baseline node:http does not serve the same bytes as the API')
      const fromFastify = await request(fastifyPort, { path: '/project_metadata.json', headers: { authorization: bearer } })
      if (fromFastify.status !== 200) throw new Error(`baseline fastify: ${fromFastify.status} ${fromFastify.body.toString()}`)
      if (!isDeepStrictEqual(JSON.parse(fromFastify.body.toString()), JSON.parse(catalogue.body.toString())))
        throw new Error('baseline fastify does not serve the same catalogue as the API')
      const refused = await request(fastifyPort, { path: '/project_metadata.json', headers: { authorization: `${bearer}x` } })
      if (refused.status !== 401) throw new Error(`baseline fastify accepted a forged token (${refused.status})`)
      log(
        `getProjects baselines: node:http on ${httpPort}, hand-wired Fastify on ${fastifyPort} (same catalogue, verifies the API's tokens)`,
      )

      const load = { script: 'get', path: '/project_metadata.json', authorization: bearer } as const
      ops.getProjects = await compare(options, 'getProjects', [
        { name: 'api', server: api, load },
        { name: 'node:http', server: bareHttp, load: { script: 'get', path: '/project_metadata.json' } },
        { name: 'fastify', server: fastify, load },
      ])
      await Promise.all([stopServer(bareHttp), stopServer(fastify)])
    }

    if (runs('getLeads')) {
      // Before submitLead, so the log is exactly LOG_SEED leads long.
      log(`getLeads: seeding ${LOG_SEED} leads through the API`)
      await seedViaApi(apiPort, bearer.slice('Bearer '.length), LOG_SEED)
      const whole = await request(apiPort, { path: '/leads.json', headers: { authorization: bearer } })
      const n = (JSON.parse(whole.body.toString()) as unknown[]).length
      if (n !== LOG_SEED) throw new Error(`getLeads: expected a ${LOG_SEED}-lead log, got ${n}`)
      log(`getLeads: log holds ${n} leads (${whole.body.length} bytes per response)`)
      ops.getLeads = await compare(options, 'getLeads', [
        { name: 'api', server: api, load: { script: 'get', path: '/leads.json', authorization: bearer } },
      ])
    }

    if (runs('issueToken')) {
      ops.issueToken = await compare(options, 'issueToken', [
        { name: 'api', server: api, load: { script: 'issue-token', path: '/api/token', authorization: BASIC } },
      ])
    }

    if (runs('submitLead')) {
      // The same build with fsync off, to price durability: bench/baselines/no-fsync-server.ts
      // starts the server with SQLite synchronous=OFF (no configuration variable can), and says so
      // in its log.
      const unsafePort = await freePort()
      const unsafeLog = join(benchDir, 'api-fsync-off.log')
      const unsafe = await startApi(options, 'api-fsync-off', join(tmp, 'api-fsync-off-data'), unsafePort, unsafeLog, {
        script: options.noFsyncJs,
      })
      servers.push(unsafe)
      const unsafeBearer = `Bearer ${await token(unsafePort)}`
      const leadsPort = await freePort()
      const naiveDb = join(tmp, 'naive-leads.db')
      const naive = await startBaseline(options, {
        name: 'naive',
        source: 'leads.ts',
        env: { PATH: process.env.PATH ?? '', PORT: String(leadsPort), DB_FILE: naiveDb, NODE_ENV: 'production' },
        port: leadsPort,
        logFile: join(tmp, 'baseline-leads.log'),
      })
      servers.push(naive)
      log(`submitLead: api with fsync off on ${unsafePort} (log ${relative(root, unsafeLog)}), naive durable leads on ${leadsPort}`)

      const dbs = { api: join(tmp, 'api-data', 'studio.db'), 'api-fsync-off': join(tmp, 'api-fsync-off-data', 'studio.db'), naive: naiveDb }
      const before = Object.fromEntries(Object.entries(dbs).map(([k, f]) => [k, countRows(f)]))
      fsync.beforeSubmitLead = fsyncProbe(tmp)
      ops.submitLead = await compare(options, 'submitLead', [
        { name: 'api', server: api, load: { script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: bearer } },
        {
          name: 'api-fsync-off',
          server: unsafe,
          load: { script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: unsafeBearer },
        },
        { name: 'naive', server: naive, load: { script: 'submit-lead', path: '/leads' } },
      ])
      fsync.afterSubmitLead = fsyncProbe(tmp)
      log(`disk: fdatasync p50 ${fmt(fsync.beforeSubmitLead.p50Us)} µs before submitLead, ${fmt(fsync.afterSubmitLead.p50Us)} µs after`)
      // Every acknowledged lead must be in the database (more may be: the warm-up's, and those
      // in flight when a run stopped, committed but not counted by wrk).
      const durability: Record<string, { acknowledgedInRounds: number; storedIncludingWarmup: number }> = {}
      for (const [name, file] of Object.entries(dbs)) {
        const acked = (ops.submitLead.servers[name]?.rounds ?? []).reduce((a, r) => a + r.requests - r.non2xx, 0)
        durability[name] = { acknowledgedInRounds: acked, storedIncludingWarmup: countRows(file) - (before[name] ?? 0) }
      }
      await Promise.all([stopServer(unsafe), stopServer(naive)])
      // The server's own word that fsync was off (the run would otherwise compare durable with durable).
      const notice = /fsync is OFF/.test(tail(unsafeLog, 1_000_000))
      results.submitLeadDurability = { ...durability, fsyncOffNoticeInLog: notice }
      log(
        `submitLead: ${Object.entries(durability)
          .map(([k, d]) => `${k} stored ${d.storedIncludingWarmup} (acked ${d.acknowledgedInRounds})`)
          .join(', ')}`,
      )
      if (!notice) throw new Error(`submitLead: ${relative(root, unsafeLog)} does not say fsync is OFF: the fsync-off run was durable`)
      if (Object.values(durability).some((d) => d.storedIncludingWarmup < d.acknowledgedInRounds))
        throw new Error('submitLead: fewer leads stored than acknowledged')
    }

    await stopServer(api)
    results.startup = {
      apiFirstAnswerMs: api.startupMs,
      apiIdleRssEarlyMB: mb(idle.early),
      apiIdleRssSettledMB: mb(idle.settled),
      apiIdleRssSettledAfterS: idle.settledAtMs === undefined ? null : Math.round(idle.settledAtMs / 100) / 10,
      mcpFirstInitializeMs: Math.round(mcp.first * 10) / 10,
      mcpSecondInitializeMs: Math.round(mcp.second * 10) / 10,
      note: 'spawn to first answered request, fresh data dir (migration, keys, bootstrap client, catalogue import)',
    }
    targets.push({
      name: 'start-up: first answered request',
      target: '< 1000 ms',
      value: `${fmt(api.startupMs)} ms`,
      pass: api.startupMs < 1000,
    })
    targets.push({
      name: 'idle RSS (settled; 2 s after start-up in brackets)',
      target: '< 100 MB',
      value: `${mb(idle.settled)} MB (${mb(idle.early)} MB)`,
      pass: idle.settled < 100 * MB,
    })

    // 4. Memory run: a separate API on a big log.
    if (runs('memory')) results.memory = await memoryRun(options, tmp, targets)
  } finally {
    await Promise.all(servers.map(stopServer))
    if (!options.keep) rmSync(tmp, { recursive: true, force: true })
    else log(`kept ${tmp}`)
  }

  const fsyncShimUs = childEnv.LD_PRELOAD ? Number(childEnv.FSYNC_DELAY_US ?? 0) || 0 : 0
  targets.unshift(...operationTargets(ops, fsyncShimUs))
  printTables(options, ops, results, targets)
  const warnings = generatorWarnings(ops)
  const cpus = os.cpus()
  const when = new Date().toISOString()
  const out = {
    when,
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model,
      memoryMB: Math.round(os.totalmem() / MB),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      loadAverageBefore: loadBefore,
      loadAverageAfter: os.loadavg(),
    },
    settings: {
      generator: `${version}: wrk -t1 -c${connections} -d${duration}s --timeout 10s --latency -s bench/wrk/<script>.lua`,
      childEnv,
      apiNodeArgs: options.apiNodeArgs,
      connections,
      durationS: duration,
      warmupS: warmup,
      rounds,
      memoryLeads: options.leads,
      logSeed: LOG_SEED,
      cpuProf: options.cpuProf,
      clockTicksPerSecond: CLK_TCK,
    },
    notes: [
      'load: wrk (C, one thread) on the same 2 cores as the servers; warm-up runs are separate wrk runs, outside every measured window',
      'rps counts 2xx responses per second; latency (µs) is wrk’s histogram of every response; per server, figures are medians of the rounds (maxUs the largest), non2xx and socketErrors are totals',
      'non2xx is wrk’s count of statuses > 399 (these routes answer 200 or an error here); the scripts have no response() hook, which would cost wrk CPU on every request',
      'cpuUsPerReq: server CPU (utime + stime of all its threads, /proc/<pid>/stat) from just before wrk starts to just after it exits, ÷ responses completed; sysUsPerReq: the stime part (the kernel: sockets, fsync)',
      'wrkCpuUsPerReq / wrkCores: wrk’s own CPU (its /proc/self/stat, read in done()); otherCores: the rest of the machine (other processes, kernel) during the run',
      'vs: the first server of an operation (the API) ÷ each baseline, the median of the per-round ratios (each round runs them back to back)',
      'baselines: node:http serves the catalogue bytes with nothing else; fastify is bench/baselines/fastify.ts (Fastify 5, @fastify/jwt verifying the API’s EdDSA tokens with fast-jwt’s verified-token cache on, @fastify/rate-limit, response schema serialization, pino at info to a file with Fastify’s default request logging); naive is bench/baselines/leads.ts (one fsync per lead); api-fsync-off is the same API build started by bench/baselines/no-fsync-server.ts (SQLite synchronous=OFF)',
      "fsync: 4 KiB write + fdatasync latency of the temp folder's disk; group commit (submitLead) gains in proportion to it, so read the submitLead ratios against it",
      'operations run in the order getProjects, getLeads, issueToken, submitLead so getLeads reads a log of exactly logSeed leads',
      ...(warnings ? [`${warnings} run(s) had wrk above 0.85 cores: the generator may have limited them`] : []),
    ],
    // The figures the targets read, per operation and server: medians of the rounds; ratios are
    // the API ÷ that server (medians of per-round ratios). The details are under ops.
    headline: Object.fromEntries(
      Object.entries(ops).map(([op, r]) => [
        op,
        Object.fromEntries(
          Object.entries(r.servers).map(([name, s]) => [
            name,
            {
              rps: Math.round(s.rps),
              cpuUsPerReq: s.cpuUsPerReq,
              sysUsPerReq: s.sysUsPerReq,
              p99Ms: s.p99Us / 1000,
              ...(r.vs[name] && { apiRpsRatio: r.vs[name].rps, apiCpuPerReqRatio: r.vs[name].cpuPerReq }),
              errors: s.non2xx + s.socketErrors,
            },
          ]),
        ),
      ]),
    ),
    ops,
    ...results,
    targets,
    pass: targets.every((t) => t.pass !== false),
  }
  writeResults(options, out, when)
}
