// Issue 5's benchmark, in one run (`npm run bench`):
//   1. builds (tsc) and starts the API from dist/ (embedded SQLite, LOG_LEVEL=info to
//      bench/api.log, fresh DATA_DIR, rate limits raised, known bootstrap client), timing start-up;
//   2. starts the baselines (bench/baseline-http.ts, bench/baseline-leads.ts);
//   3. drives each operation with autocannon, API and baseline interleaved, over N rounds;
//   4. a memory run: a separate API on a 100,000-lead log, GET /leads.json while sampling RSS;
//   5. prints a table and writes bench/results.json (figures, targets, pass/fail).
// Progress goes to stderr, the tables to stdout.
//
// Options: --duration=6 (s per run)  --rounds=3  --connections=32  --leads=100000 (memory run)
//          --only=getProjects,submitLead,getLeads,issueToken,memory   --skip-build
//          --cpu-prof (API under `node --cpu-prof`, profiles in bench/profiles/)  --keep (temp dir)
//          --server=path/to/server.js (A/B an experimental build; implies --skip-build)
//          --api-node-args="--max-semi-space-size=4" (extra Node flags for the API processes)
//          --out=file (default bench/results.json; partial/experimental runs: bench/results-<time>.json)
//          --child-env="K=V;K2=V2" (extra environment for the API and baseline processes, e.g. an
//            LD_PRELOAD shim that adds latency to fsync, to read submitLead against a slower disk)
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import * as http from 'node:http'
import * as net from 'node:net'
import * as os from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import autocannon, { type Options as CannonOptions, type Request as CannonRequest } from 'autocannon'
import SQLite from 'better-sqlite3'
import { openStore } from '../plugins/store/open.js'

// ---------------------------------------------------------------------------------------------
// Options and paths

const args = new Map<string, string>()
for (const a of process.argv.slice(2)) {
  const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a)
  if (!m?.[1]) {
    process.stderr.write(`bench: unknown argument ${a}\n`)
    process.exit(2)
  }
  args.set(m[1], m[2] ?? 'true')
}
const num = (name: string, dflt: number): number => {
  const v = Number(args.get(name) ?? dflt)
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`)
  return v
}
const DURATION = num('duration', 6)
const ROUNDS = num('rounds', 3)
const CONNECTIONS = num('connections', 32)
const MEMORY_LEADS = num('leads', 100_000)
const WARMUP = Math.min(2, DURATION)
const LOG_SEED = 1000
const ALL_PARTS = ['getProjects', 'getLeads', 'issueToken', 'submitLead', 'memory'] as const
type Part = (typeof ALL_PARTS)[number]
const only = new Set((args.get('only') ?? ALL_PARTS.join(',')).split(',').map((s) => s.trim()))
const runs = (p: Part) => only.has(p)

const here = dirname(fileURLToPath(import.meta.url))
// bench/ when run with tsx, dist/bench/ when compiled.
const root = resolve(here, '..').replace(/[\\/]dist$/, '')
const benchDir = join(root, 'bench')
// --server=<file>: benchmark another build of the server (an experiment); default dist/server.js.
const serverJs = resolve(args.get('server') ?? join(root, 'dist', 'server.js'))
const tsxImport = ['--import', 'tsx']

const t0 = performance.now()
const log = (msg: string) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`)

const CLIENT_ID = 'bench-client'
const CLIENT_SECRET = randomBytes(32).toString('base64url')
const BASIC = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`
const RATE_LIMITS = 'getProjects=100000000, submitLead=100000000, getLeads=100000000, issueToken=100000000'
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100

// ---------------------------------------------------------------------------------------------
// Processes

const children = new Set<ChildProcess>()
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    log(`${sig}: stopping`)
    process.exit(130)
  })
}

interface Server {
  name: string
  port: number
  child: ChildProcess
  pid: number
  logFile: string
  /** Spawn to first answered request, ms. */
  startupMs: number
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = net.createServer()
    s.once('error', fail)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo
      s.close(() => ok(port))
    })
  })
}

interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
}

const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 64 })

function request(
  port: number,
  opts: { method?: string; path: string; headers?: Record<string, string>; body?: string; agent?: http.Agent | false },
): Promise<Reply> {
  return new Promise((ok, fail) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: opts.method ?? 'GET',
        path: opts.path,
        headers: { ...opts.headers, ...(opts.body !== undefined && { 'content-length': String(Buffer.byteLength(opts.body)) }) },
        agent: opts.agent ?? keepAlive,
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => ok({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on('error', fail)
      },
    )
    req.on('error', fail)
    req.end(opts.body)
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return '(no log)'
  }
}

/** Spawns a Node process and polls `probe` every 2 ms until something answers (any status). */
async function startServer(
  name: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  port: number,
  logFile: string,
  probe: string,
  append = false,
): Promise<Server> {
  const fd = openSync(logFile, append ? 'a' : 'w')
  const started = performance.now()
  const child = spawn(process.execPath, nodeArgs, { cwd: root, env: { ...env, ...childEnv }, stdio: ['ignore', fd, fd] })
  closeSync(fd)
  children.add(child)
  child.once('exit', () => children.delete(child))
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `${name} exited during start-up (${child.exitCode ?? child.signalCode}); ${relative(root, logFile)}:\n${tail(logFile)}`,
      )
    }
    try {
      await request(port, { path: probe, agent: false })
      break
    } catch {
      if (performance.now() - started > 30_000) throw new Error(`${name} did not answer within 30 s:\n${tail(logFile)}`)
      await sleep(2)
    }
  }
  const startupMs = performance.now() - started
  if (child.pid === undefined) throw new Error(`${name} has no pid`)
  return { name, port, child, pid: child.pid, logFile, startupMs }
}

async function stopServer(s: Server): Promise<void> {
  if (s.child.exitCode !== null || s.child.signalCode !== null) return
  const exited = once(s.child, 'exit')
  s.child.kill('SIGTERM')
  const t = setTimeout(() => s.child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(t)
}

function apiEnv(port: number, dataDir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    RATE_LIMITS,
    BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
  }
}

const PROBE = '/.well-known/oauth-authorization-server'
const apiNodeArgs = (args.get('api-node-args') ?? '').split(/\s+/).filter(Boolean)
const childEnv: Record<string, string> = Object.fromEntries(
  (args.get('child-env') ?? '')
    .split(';')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
)
const cpuProf = args.has('cpu-prof')
const profDir = join(benchDir, 'profiles')

function startApi(name: string, dataDir: string, port: number, logFile: string, append = false): Promise<Server> {
  const flags = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`] : []
  flags.push(...apiNodeArgs)
  return startServer(name, [...flags, serverJs], apiEnv(port, dataDir), port, logFile, PROBE, append)
}

/** Resident set size of a process, bytes (VmRSS). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m?.[1] ? Number(m[1]) * 1024 : Number.NaN
}

/** CPU time of a process (user + system), seconds. */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // After the command: state is field 3; utime and stime are fields 14 and 15.
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK
}

/** Busy CPU time of the whole machine (all processes, kernel, steal), seconds. */
function machineBusy(): number {
  const first = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
  // cpu  user nice system idle iowait irq softirq steal ...
  const f = first.trim().split(/\s+/).slice(1).map(Number)
  const busy = (f[0] ?? 0) + (f[1] ?? 0) + (f[2] ?? 0) + (f[5] ?? 0) + (f[6] ?? 0) + (f[7] ?? 0)
  return busy / CLK_TCK
}

const MB = 1024 * 1024
const mb = (b: number) => Math.round((b / MB) * 10) / 10

/**
 * fsync latency of the disk under `dir`: 4 KiB write + fdatasync, `n` times. Group commit pays
 * off in proportion to this, so the submitLead ratio is read against it.
 */
function fsyncProbe(dir: string, n = 400): { p50Us: number; p99Us: number } {
  const file = join(dir, 'fsync-probe.bin')
  const fd = openSync(file, 'w')
  const block = Buffer.alloc(4096, 7)
  const times = new Float64Array(n)
  try {
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      writeSync(fd, block, 0, block.length, (i % 256) * block.length)
      fdatasyncSync(fd)
      times[i] = (performance.now() - t) * 1000
    }
  } finally {
    closeSync(fd)
    rmSync(file, { force: true })
  }
  times.sort()
  return { p50Us: percentile(times, 0.5), p99Us: percentile(times, 0.99) }
}

interface IdleRss {
  /** RSS 2 s after the first answered request, bytes. */
  early: number
  /** RSS once V8's idle memory reducer has shrunk the heap (or at the deadline), bytes. */
  settled: number
  /** When the settled figure was reached, ms after the first answer (undefined: no drop seen). */
  settledAtMs: number | undefined
}

/**
 * Idle RSS of a process that has just started. V8 keeps the heap it grew during start-up until
 * its memory reducer runs on an idle heap (~20-25 s later on Node 20), so both figures are kept:
 * the one 2 s after start-up and the settled one (waits for a drop of >= 8 MB, at most `maxMs`).
 */
async function idleRss(pid: number, maxMs = 35_000): Promise<IdleRss> {
  const started = performance.now()
  await sleep(2000)
  const early = rssOf(pid)
  let droppedAt: number | undefined
  for (;;) {
    await sleep(250)
    const now = performance.now() - started
    const rss = rssOf(pid)
    if (droppedAt === undefined && rss < early - 8 * MB) droppedAt = now
    if (droppedAt !== undefined && now - droppedAt >= 1000) return { early, settled: rss, settledAtMs: droppedAt }
    if (now >= maxMs) return { early, settled: rss, settledAtMs: undefined }
  }
}

async function token(port: number): Promise<string> {
  const r = await request(port, {
    method: 'POST',
    path: '/api/token',
    headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  if (r.status !== 200) throw new Error(`token request: ${r.status} ${r.body.toString()}`)
  return (JSON.parse(r.body.toString()) as { access_token: string }).access_token
}

// ---------------------------------------------------------------------------------------------
// Load generation

let leadCounter = 0
const runTag = randomBytes(3).toString('hex')
/** A unique, valid lead. */
function nextLead(): string {
  const n = ++leadCounter
  return JSON.stringify({
    name: `Bench Lead ${n}`,
    email: `lead${n}.${runTag}@example.com`,
    phone: `+44 20 ${String(n).padStart(8, '0')}`,
  })
}

interface Figures {
  /** 2xx responses per second. */
  rps: number
  p50: number
  p99: number
  non2xx: number
  errors: number
  ok: number
  /** Server CPU during the run, in cores (1 = one core busy). */
  serverCpu: number
  /** Load generator (this process) CPU during the run, in cores. */
  genCpu: number
  /** Everything else busy on the machine during the run (other processes, kernel), in cores. */
  otherCpu: number
  /** Server CPU time per 2xx response, µs (steadier than req/s on a shared machine). */
  cpuUsPerReq: number
  durationS: number
}

function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN
}

async function cannon(server: Server, options: Omit<CannonOptions, 'url'> & { path?: string }, duration = DURATION): Promise<Figures> {
  const { path = '', ...rest } = options
  const latencies: number[] = []
  const cpu0 = cpuOf(server.pid)
  const gen0 = process.cpuUsage()
  const busy0 = machineBusy()
  const w0 = performance.now()
  const inst = autocannon({ url: `http://127.0.0.1:${server.port}${path}`, connections: CONNECTIONS, duration, ...rest })
  inst.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status >= 200 && status < 300) latencies.push(ms)
  })
  const res = await inst
  const wall = (performance.now() - w0) / 1000
  const cpu = cpuOf(server.pid) - cpu0
  const gen = process.cpuUsage(gen0)
  const busy = machineBusy() - busy0
  const sorted = Float64Array.from(latencies).sort()
  const ok = res['2xx']
  return {
    rps: ok / res.duration,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    non2xx: res.non2xx,
    errors: res.errors + res.timeouts,
    ok,
    serverCpu: cpu / wall,
    genCpu: (gen.user + gen.system) / 1e6 / wall,
    otherCpu: Math.max(0, (busy - cpu - (gen.user + gen.system) / 1e6) / wall),
    cpuUsPerReq: ok > 0 ? (cpu / ok) * 1e6 : Number.NaN,
    durationS: res.duration,
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

function summarise(rounds: Figures[]) {
  return {
    rps: median(rounds.map((r) => r.rps)),
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    non2xx: rounds.reduce((a, r) => a + r.non2xx, 0),
    errors: rounds.reduce((a, r) => a + r.errors, 0),
    serverCpu: median(rounds.map((r) => r.serverCpu)),
    genCpu: median(rounds.map((r) => r.genCpu)),
    otherCpu: median(rounds.map((r) => r.otherCpu)),
    cpuUsPerReq: median(rounds.map((r) => r.cpuUsPerReq)),
    rounds,
  }
}
type Summary = ReturnType<typeof summarise>

interface OpResult {
  api: Summary
  baseline?: Summary & { name: string }
  /** api req/s ÷ baseline req/s (medians). */
  ratio?: number
}

const fmt = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-')
const line = (f: Figures) =>
  `${fmt(f.rps)} req/s, p50 ${fmt(f.p50, 2)} ms, p99 ${fmt(f.p99, 2)} ms, non-2xx ${f.non2xx}, errors ${f.errors}, server ${fmt(f.cpuUsPerReq)} µs CPU/req; CPU server ${fmt(f.serverCpu, 2)} / generator ${fmt(f.genCpu, 2)} / other ${fmt(f.otherCpu, 2)}`

/** Warm-up, then `ROUNDS` rounds of (API run, baseline run). */
async function compare(
  op: string,
  api: { server: Server; options: Omit<CannonOptions, 'url'> & { path?: string } },
  baseline?: { name: string; server: Server; options: Omit<CannonOptions, 'url'> & { path?: string } },
): Promise<OpResult> {
  log(`${op}: warm-up ${WARMUP}s${baseline ? ' each' : ''}`)
  await cannon(api.server, api.options, WARMUP)
  if (baseline) await cannon(baseline.server, baseline.options, WARMUP)
  const a: Figures[] = []
  const b: Figures[] = []
  for (let i = 1; i <= ROUNDS; i++) {
    const fa = await cannon(api.server, api.options)
    a.push(fa)
    log(`${op} round ${i}/${ROUNDS} api:      ${line(fa)}`)
    if (baseline) {
      const fb = await cannon(baseline.server, baseline.options)
      b.push(fb)
      log(`${op} round ${i}/${ROUNDS} ${baseline.name.padEnd(9)} ${line(fb)}`)
    }
  }
  const out: OpResult = { api: summarise(a) }
  if (baseline) {
    out.baseline = { name: baseline.name, ...summarise(b) }
    out.ratio = out.api.rps / out.baseline.rps
  }
  return out
}

/** Sends `count` unique leads through the API, `concurrency` at a time. */
async function seedViaApi(port: number, bearer: string, count: number, concurrency = 32): Promise<void> {
  let sent = 0
  const worker = async () => {
    while (sent < count) {
      sent++
      const r = await request(port, {
        method: 'POST',
        path: '/scripts/enquiry_backend.php',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: nextLead(),
      })
      if (r.status !== 200) throw new Error(`seeding a lead: ${r.status} ${r.body.toString()}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

function countRows(dbFile: string): number {
  const db = new SQLite(dbFile, { readonly: true, fileMustExist: true })
  try {
    return (db.prepare('select count(*) as n from leads').get() as { n: number }).n
  } finally {
    db.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Main

interface Target {
  name: string
  target: string
  value: string
  pass: boolean | null
}

async function main(): Promise<void> {
  // 1. Build.
  if (!args.has('skip-build') && !args.has('server')) {
    log('building: tsc (dist/)')
    const tsc = spawnSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc')], { cwd: root, encoding: 'utf8' })
    if (tsc.status !== 0) {
      const out = `${tsc.stdout}${tsc.stderr}`.trim().split('\n').slice(0, 20).join('\n')
      if (!existsSync(serverJs)) throw new Error(`tsc failed and there is no dist/server.js:\n${out}`)
      log(`WARNING: tsc reported errors (JS is still emitted); benchmarking dist/ as built:\n${out}`)
    }
  }
  if (!existsSync(serverJs)) throw new Error('dist/server.js is missing: run `npm run build` first')

  const loadBefore = os.loadavg()
  if ((loadBefore[0] ?? 0) > 0.5)
    log(`WARNING: load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}: other work is running; figures will be noisy`)
  const tmp = mkdtempSync(join(os.tmpdir(), 'studio-bench-'))
  log(`temp folder ${tmp}`)
  if (cpuProf) {
    mkdirSync(profDir, { recursive: true })
    writeFileSync(join(profDir, '.gitignore'), '*\n')
  }
  const results: Record<string, unknown> = {}
  const fsync: Record<string, { p50Us: number; p99Us: number }> = { start: fsyncProbe(tmp) }
  results.fsync = fsync
  log(`disk: 4 KiB write + fdatasync p50 ${fmt(fsync.start?.p50Us ?? Number.NaN)} µs, p99 ${fmt(fsync.start?.p99Us ?? Number.NaN)} µs`)
  const ops: Record<string, OpResult> = {}
  const targets: Target[] = []

  try {
    // 2. The API, fresh data dir.
    const apiPort = await freePort()
    const api = await startApi('api', join(tmp, 'api-data'), apiPort, join(benchDir, 'api.log'))
    log(`api started: first answered request ${fmt(api.startupMs)} ms after spawn (pid ${api.pid}, log ${relative(root, api.logFile)})`)
    log('api idle: sampling RSS until V8 settles (up to 35 s)')
    const idle = await idleRss(api.pid)
    log(
      `api idle RSS ${mb(idle.early)} MB 2 s after start-up; ${mb(idle.settled)} MB settled${idle.settledAtMs === undefined ? ' (no drop within 35 s)' : ` (after ${fmt(idle.settledAtMs / 1000, 1)} s)`}`,
    )

    const bearer = await token(apiPort)
    const catalogue = await request(apiPort, { path: '/project_metadata.json', headers: { authorization: `Bearer ${bearer}` } })
    if (catalogue.status !== 200) throw new Error(`catalogue: ${catalogue.status} ${catalogue.body.toString()}`)
    const catalogueFile = join(tmp, 'catalogue.json')
    writeFileSync(catalogueFile, catalogue.body)
    log(`catalogue: ${catalogue.body.length} bytes`)

    // 3. Baselines.
    const httpPort = await freePort()
    const bareHttp = await startServer(
      'baseline-http',
      [...tsxImport, join(benchDir, 'baseline-http.ts')],
      { PATH: process.env.PATH ?? '', PORT: String(httpPort), BODY_FILE: catalogueFile },
      httpPort,
      join(tmp, 'baseline-http.log'),
      '/',
    )
    const same = await request(httpPort, { path: '/project_metadata.json' })
    if (!same.body.equals(catalogue.body)) throw new Error('baseline-http does not serve the same bytes as the API')
    const leadsPort = await freePort()
    const naiveDb = join(tmp, 'naive-leads.db')
    const naive = await startServer(
      'baseline-leads',
      [...tsxImport, join(benchDir, 'baseline-leads.ts')],
      { PATH: process.env.PATH ?? '', PORT: String(leadsPort), DB_FILE: naiveDb, NODE_ENV: 'production' },
      leadsPort,
      join(tmp, 'baseline-leads.log'),
      '/',
    )
    log(`baselines started: node:http on ${httpPort}, naive durable leads on ${leadsPort}`)

    const auth = { authorization: `Bearer ${bearer}` }

    // 4. Operations, each: warm-up, then rounds of (API, baseline).
    if (runs('getProjects')) {
      ops.getProjects = await compare(
        'getProjects',
        { server: api, options: { path: '/project_metadata.json', headers: auth } },
        { name: 'node:http', server: bareHttp, options: { path: '/project_metadata.json' } },
      )
    }

    if (runs('getLeads')) {
      // Before submitLead, so the log is exactly LOG_SEED leads long.
      log(`getLeads: seeding ${LOG_SEED} leads through the API`)
      await seedViaApi(apiPort, bearer, LOG_SEED)
      const whole = await request(apiPort, { path: '/leads.json', headers: auth })
      const n = (JSON.parse(whole.body.toString()) as unknown[]).length
      if (n !== LOG_SEED) throw new Error(`getLeads: expected a ${LOG_SEED}-lead log, got ${n}`)
      log(`getLeads: log holds ${n} leads (${whole.body.length} bytes per response)`)
      ops.getLeads = await compare('getLeads', { server: api, options: { path: '/leads.json', headers: auth } })
    }

    if (runs('issueToken')) {
      ops.issueToken = await compare('issueToken', {
        server: api,
        options: {
          path: '/api/token',
          method: 'POST',
          headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=client_credentials',
        },
      })
    }

    if (runs('submitLead')) {
      const leadRequest = (path: string, headers: Record<string, string>): CannonRequest => ({
        method: 'POST',
        path,
        headers: { ...headers, 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: nextLead() }),
      })
      const apiDb = join(tmp, 'api-data', 'studio.db')
      const before = { api: countRows(apiDb), naive: countRows(naiveDb) }
      fsync.beforeSubmitLead = fsyncProbe(tmp)
      ops.submitLead = await compare(
        'submitLead',
        { server: api, options: { requests: [leadRequest('/scripts/enquiry_backend.php', auth)] } },
        { name: 'naive', server: naive, options: { requests: [leadRequest('/leads', {})] } },
      )
      // Every acknowledged lead must be in the database (more may be: requests in flight when a
      // run stopped are committed but their receipts are dropped by autocannon).
      const acked = {
        api: ops.submitLead.api.rounds.reduce((a, r) => a + r.ok, 0),
        naive: ops.submitLead.baseline?.rounds.reduce((a, r) => a + r.ok, 0) ?? 0,
      }
      const stored = { api: countRows(apiDb) - before.api, naive: countRows(naiveDb) - before.naive }
      fsync.afterSubmitLead = fsyncProbe(tmp)
      log(`disk: fdatasync p50 ${fmt(fsync.beforeSubmitLead.p50Us)} µs before submitLead, ${fmt(fsync.afterSubmitLead.p50Us)} µs after`)
      results.submitLeadDurability = { acknowledgedInRounds: acked, storedIncludingWarmup: stored }
      log(`submitLead: stored api ${stored.api} (acked in rounds ${acked.api}), naive ${stored.naive} (acked ${acked.naive})`)
      if (stored.api < acked.api || stored.naive < acked.naive) throw new Error('submitLead: fewer leads stored than acknowledged')
    }

    await Promise.all([stopServer(api), stopServer(bareHttp), stopServer(naive)])
    results.startup = {
      apiFirstAnswerMs: api.startupMs,
      apiIdleRssEarlyMB: mb(idle.early),
      apiIdleRssSettledMB: mb(idle.settled),
      apiIdleRssSettledAfterS: idle.settledAtMs === undefined ? null : Math.round(idle.settledAtMs / 100) / 10,
      bareNodeHttpFirstAnswerMs: bareHttp.startupMs,
      naiveFastifyFirstAnswerMs: naive.startupMs,
      note: 'spawn to first answered request, fresh data dir (migration, keys, bootstrap client, catalogue import); baselines load through tsx',
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

    // 5. Memory run: a separate API on a big log.
    if (runs('memory')) results.memory = await memoryRun(tmp, targets)
  } finally {
    if (!args.has('keep')) rmSync(tmp, { recursive: true, force: true })
    else log(`kept ${tmp}`)
  }

  if (ops.getProjects) {
    const g = ops.getProjects
    targets.unshift(
      {
        name: 'getProjects req/s vs bare node:http',
        target: '>= 0.70x',
        value: `${fmt(g.ratio ?? Number.NaN, 2)}x (${fmt(g.api.rps)} vs ${fmt(g.baseline?.rps ?? Number.NaN)})`,
        pass: (g.ratio ?? 0) >= 0.7 && g.api.non2xx === 0,
      },
      { name: 'getProjects p99', target: '< 10 ms', value: `${fmt(g.api.p99, 2)} ms`, pass: g.api.p99 < 10 },
    )
  }
  if (ops.submitLead) {
    const s = ops.submitLead
    targets.splice(ops.getProjects ? 2 : 0, 0, {
      name: 'submitLead req/s vs naive durable',
      target: '>= 2.5x',
      value: `${fmt(s.ratio ?? Number.NaN, 2)}x (${fmt(s.api.rps)} vs ${fmt(s.baseline?.rps ?? Number.NaN)})`,
      pass: (s.ratio ?? 0) >= 2.5 && s.api.non2xx === 0,
    })
  }
  if (ops.issueToken) {
    const t = ops.issueToken
    targets.push({ name: 'issueToken tokens/s', target: '>= 5000', value: fmt(t.api.rps), pass: t.api.rps >= 5000 && t.api.non2xx === 0 })
  }

  printTables(ops, results, targets)
  const cpus = os.cpus()
  const out = {
    when: new Date().toISOString(),
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
      childEnv,
      apiNodeArgs,
      connections: CONNECTIONS,
      durationS: DURATION,
      warmupS: WARMUP,
      rounds: ROUNDS,
      memoryLeads: MEMORY_LEADS,
      logSeed: LOG_SEED,
      cpuProf,
    },
    notes: [
      'req/s counts 2xx responses; p50/p99 are exact percentiles of 2xx latencies (ms) seen by autocannon; figures are medians of the rounds, non-2xx and errors are totals',
      'cpuUsPerReq: server CPU time (user+system, all threads) per 2xx response; steadier than req/s when the machine is shared',
      'serverCpu / genCpu / otherCpu: cores used by the server / by this process (autocannon) / by everything else (other processes, kernel networking) during a run; all share the machine',
      "fsync: 4 KiB write + fdatasync latency of the temp folder's disk; group commit (submitLead) gains in proportion to it, so read the submitLead ratio against it",
      'operations run in the order getProjects, getLeads, issueToken, submitLead so getLeads reads a log of exactly logSeed leads',
    ],
    ops,
    ...results,
    targets,
    pass: targets.every((t) => t.pass !== false),
  }
  // A partial or experimental run (--only, --server, --cpu-prof, ...) does not overwrite the
  // reference results.json: it goes to results-<time>.json (git-ignored), or to --out.
  const experimental = ['only', 'server', 'cpu-prof', 'child-env', 'api-node-args'].some((a) => args.has(a))
  const outFile = args.has('out')
    ? resolve(args.get('out') ?? '')
    : join(benchDir, experimental ? `results-${out.when.replace(/[:.]/g, '-')}.json` : 'results.json')
  writeFileSync(outFile, `${JSON.stringify(out, null, 2)}\n`)
  log(`wrote ${relative(root, outFile)}`)
}

async function memoryRun(tmp: string, targets: Target[]) {
  const dataDir = join(tmp, 'memory-data')
  const logFile = join(benchDir, 'api-memory.log')
  const port = await freePort()
  log(`memory run: storing ${MEMORY_LEADS} leads through the store (migrations first)`)
  // The store's own migrations and repository, so the seeded log is exactly what the API writes.
  const store = await openStore({ dataDir, databaseUrl: undefined, dbPoolMax: 1 })
  const base = Date.now() - MEMORY_LEADS * 1000
  for (let from = 0; from < MEMORY_LEADS; from += 2000) {
    const batch = Array.from({ length: Math.min(2000, MEMORY_LEADS - from) }, (_, k) => {
      const i = from + k
      return {
        id: randomUUID(),
        name: `Memory Lead ${i}`,
        email: `memory.lead.${i}@example.com`,
        phone: `+44 20 ${String(i).padStart(8, '0')}`,
        received_at: new Date(base + i * 1000).toISOString(),
        client_id: CLIENT_ID,
      }
    })
    await store.leads.insertBatch(batch, new Map(), new Date(0).toISOString())
  }
  await store.close()

  const api = await startApi('api-memory', dataDir, port, logFile, true)
  log(`memory run: restarted on ${MEMORY_LEADS} leads, first answered request after ${fmt(api.startupMs)} ms`)
  const bearer = await token(port)
  // The baseline is the settled idle RSS: measured 2 s after start-up, the start-up heap V8 has
  // not yet given back would absorb (and hide) the growth.
  log('memory run: waiting for idle RSS to settle (up to 35 s)')
  const idle = await idleRss(api.pid)
  const baselineRss = idle.settled

  const samples: { t: number; rss: number }[] = []
  const sampler = setInterval(() => {
    try {
      samples.push({ t: performance.now(), rss: rssOf(api.pid) })
    } catch {
      /* the process is gone */
    }
  }, 20)

  const fetchLog = (): Promise<{ bytes: number; ms: number; status: number; body?: Buffer }> =>
    new Promise((ok, fail) => {
      const started = performance.now()
      const req = http.get(
        { host: '127.0.0.1', port, path: '/leads.json', headers: { authorization: `Bearer ${bearer}` }, agent: false },
        (res) => {
          let bytes = 0
          res.on('data', (c: Buffer) => {
            bytes += c.length
          })
          res.on('end', () => ok({ bytes, ms: performance.now() - started, status: res.statusCode ?? 0 }))
          res.on('error', fail)
        },
      )
      req.on('error', fail)
    })

  const phases: { phase: string; requests: { bytes: number; ms: number; status: number }[]; peakRss: number }[] = []
  const phase = async (name: string, fn: () => Promise<{ bytes: number; ms: number; status: number }[]>) => {
    const from = performance.now()
    const requests = await fn()
    await sleep(100)
    const peak = Math.max(...samples.filter((s) => s.t >= from).map((s) => s.rss))
    phases.push({ phase: name, requests, peakRss: peak })
    const bad = requests.filter((r) => r.status !== 200)
    if (bad.length) throw new Error(`memory run: GET /leads.json answered ${bad.map((r) => r.status).join(', ')}`)
    log(
      `memory run: ${name}: ${requests.length} × ${mb(requests[0]?.bytes ?? 0)} MB in ${requests.map((r) => fmt(r.ms)).join(', ')} ms; peak RSS ${mb(peak)} MB`,
    )
  }

  await phase('sequential', async () => {
    const out = []
    for (let i = 0; i < 3; i++) out.push(await fetchLog())
    return out
  })
  await phase('4 concurrent', async () => {
    const out = []
    for (let i = 0; i < 2; i++) out.push(...(await Promise.all([fetchLog(), fetchLog(), fetchLog(), fetchLog()])))
    return out
  })
  clearInterval(sampler)
  const afterRss = rssOf(api.pid)
  // Check once that the whole log comes back (parsed after sampling, so it cannot skew it).
  const check = (await request(port, { path: '/leads.json', headers: { authorization: `Bearer ${bearer}` } })).body
  const entries = (JSON.parse(check.toString()) as unknown[]).length
  await stopServer(api)
  if (entries !== MEMORY_LEADS) throw new Error(`memory run: expected ${MEMORY_LEADS} leads, got ${entries}`)

  const peakRss = Math.max(...samples.map((s) => s.rss))
  const growth = peakRss - baselineRss
  log(`memory run: baseline RSS ${mb(baselineRss)} MB, peak ${mb(peakRss)} MB, growth ${mb(growth)} MB (${samples.length} samples)`)
  targets.push({
    name: `getLeads ${MEMORY_LEADS} leads streamed: RSS growth`,
    target: '< 64 MB',
    value: `${mb(growth)} MB`,
    pass: growth < 64 * MB,
  })
  return {
    leads: MEMORY_LEADS,
    responseBytes: check.length,
    entriesChecked: entries,
    restartFirstAnswerMs: api.startupMs,
    baselineRssMB: mb(baselineRss),
    earlyIdleRssMB: mb(idle.early),
    peakRssMB: mb(peakRss),
    peakGrowthMB: mb(growth),
    rssAfterMB: mb(afterRss),
    samples: samples.length,
    phases: phases.map((p) => ({
      phase: p.phase,
      peakRssMB: mb(p.peakRss),
      requestMs: p.requests.map((r) => Math.round(r.ms)),
      bytes: p.requests[0]?.bytes,
    })),
  }
}

function printTables(ops: Record<string, OpResult>, results: Record<string, unknown>, targets: Target[]): void {
  const rows: string[][] = [
    ['operation', 'server', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'µs CPU/req', 'srv CPU', 'gen CPU', 'other', 'ratio'],
  ]
  for (const [op, r] of Object.entries(ops)) {
    const row = (who: string, s: Summary, ratio: string) => [
      op,
      who,
      fmt(s.rps),
      fmt(s.p50, 2),
      fmt(s.p99, 2),
      String(s.non2xx + s.errors),
      fmt(s.cpuUsPerReq),
      fmt(s.serverCpu, 2),
      fmt(s.genCpu, 2),
      fmt(s.otherCpu, 2),
      ratio,
    ]
    rows.push(row('api', r.api, r.ratio === undefined ? '' : `${fmt(r.ratio, 2)}x`))
    if (r.baseline) rows.push(row(r.baseline.name, r.baseline, ''))
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  const print = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')
  const out: string[] = []
  out.push('')
  out.push(
    `Studio API benchmark: ${os.cpus().length} CPUs, Node ${process.version}, ${CONNECTIONS} connections, ${ROUNDS} rounds × ${DURATION} s (medians)`,
  )
  out.push('')
  for (const r of rows) out.push(print(r))
  const st = results.startup as { apiFirstAnswerMs: number; apiIdleRssEarlyMB: number; apiIdleRssSettledMB: number } | undefined
  const mem = results.memory as { baselineRssMB: number; peakRssMB: number; peakGrowthMB: number; leads: number } | undefined
  out.push('')
  if (st) {
    out.push(
      `start-up: first answered request ${fmt(st.apiFirstAnswerMs)} ms after spawn; idle RSS ${st.apiIdleRssEarlyMB} MB 2 s after start-up, ${st.apiIdleRssSettledMB} MB settled`,
    )
  }
  if (mem)
    out.push(
      `getLeads on ${mem.leads} leads: RSS baseline ${mem.baselineRssMB} MB, peak ${mem.peakRssMB} MB, growth ${mem.peakGrowthMB} MB`,
    )
  out.push('')
  const tw = Math.max(...targets.map((t) => t.name.length))
  const vw = Math.max(...targets.map((t) => t.value.length))
  for (const t of targets) out.push(`${t.pass ? 'PASS' : 'FAIL'}  ${t.name.padEnd(tw)}  ${t.value.padEnd(vw)}  (target ${t.target})`)
  out.push('')
  process.stdout.write(`${out.join('\n')}\n`)
}

main().catch((err: Error) => {
  log(`failed: ${err.stack ?? err.message}`)
  process.exit(1)
})
