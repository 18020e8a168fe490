// Issue 5's benchmark, in one run (`npm run bench`):
//   1. builds (npm run build) and starts the API from dist/ (embedded SQLite, LOG_LEVEL=info to
//      bench/api.log, fresh DATA_DIR, rate limits raised, known bootstrap client), timing start-up
//      (spawn to first answered request) and sampling its idle RSS;
//   2. starts the baselines each part needs: bench/baseline-http.ts (bare node:http) and
//      bench/baseline-fastify.ts (getProjects hand-wired in Fastify, verifying the API's tokens)
//      for getProjects; bench/baseline-leads.ts (naive durable) and a second API with fsync off
//      for submitLead;
//   3. drives each operation with wrk (C, `wrk -t1 -c32 --latency`, Lua scripts in bench/wrk/),
//      a warm-up per server, then N rounds of (API, baselines) interleaved; each run reads the
//      server's CPU time (/proc/<pid>/stat) before and after the measured window, and wrk reports
//      its own CPU, so every figure comes with its CPU cost and the generator's;
//   4. a memory run: a separate API on a 100,000-lead log, GET /leads.json while sampling RSS;
//   5. prints a table and writes bench/results.json (figures, ratios, targets, pass/fail).
// Progress goes to stderr, the tables to stdout. Needs wrk on PATH (Debian: apt-get install wrk).
//
// Options: --duration=6 (whole seconds per run)  --rounds=3  --connections=32  --leads=100000 (memory run)
//          --only=getProjects,submitLead,getLeads,issueToken,memory   --skip-build
//          --cpu-prof (API under `node --cpu-prof`, profiles in bench/profiles/)  --keep (temp dir)
//          --server=path/to/server.js (A/B an experimental build; implies --skip-build)
//          --api-node-args="--max-semi-space-size=4" (extra Node flags for the API processes)
//          --out=file (default bench/results.json; partial/experimental runs: bench/results-<time>.json)
//          --redis (the scale-out mode, bench/scale-out.ts: embedded, Redis, PostgreSQL + Redis side by
//            side, two instances, Redis stopped under load; --only=getProjects,issueToken,submitLead,
//            twoInstances,outage; --database=postgres://… the PostgreSQL server to create its databases on;
//            --candidates="name=path/to/server.bundle.js;…" other builds with Redis in getProjects' rounds;
//            --pg-flush-delay-us=N a PostgreSQL of the bench's own instead, every WAL flush N µs slower:
//            bench/private-postgres.ts)
//          --child-env="K=V;K2=V2" (extra environment for the API and baseline processes, e.g. an
//            LD_PRELOAD shim that adds latency to fsync, to read submitLead against a slower disk:
//            bench/fsync-delay.c; the "submitLead vs naive durable" target is judged only with
//            LD_PRELOAD and FSYNC_DELAY_US=250)
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
import * as os from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import SQLite from 'better-sqlite3'
import { onPath } from '../features/backup/postgres.js'
import { freePort } from './free-port.js'

// ---------------------------------------------------------------------------------------------
// Options and paths

// The load generator: checked before anything else.
const WRK = onPath('wrk')
if (!WRK) {
  process.stderr.write("bench: wrk not found; install Debian's wrk (apt-get install wrk)\n")
  process.exit(2)
}

const args = new Map<string, string>()
for (const a of process.argv.slice(2)) {
  const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a)
  if (!m?.[1]) {
    process.stderr.write(`bench: unknown argument ${a}\n`)
    process.exit(2)
  }
  args.set(m[1], m[2] ?? 'true')
}
const num = (name: string, dflt: number, integer = false): number => {
  const v = Number(args.get(name) ?? dflt)
  if (!Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) {
    process.stderr.write(`bench: --${name} must be a positive ${integer ? 'whole ' : ''}number\n`)
    process.exit(2)
  }
  return v
}
// wrk takes whole seconds.
const DURATION = num('duration', 6, true)
const ROUNDS = num('rounds', 3, true)
const CONNECTIONS = num('connections', 32, true)
const MEMORY_LEADS = num('leads', 100_000, true)
const WARMUP = Math.min(2, DURATION)
const LOG_SEED = 1000
const ALL_PARTS = ['getProjects', 'getLeads', 'issueToken', 'submitLead', 'memory'] as const
type Part = (typeof ALL_PARTS)[number]
/** The parts of the scale-out mode (--redis, bench/scale-out.ts). */
export const SCALE_OUT_PARTS = ['getProjects', 'issueToken', 'submitLead', 'twoInstances', 'outage'] as const
const SCALE_OUT = args.has('redis')
const PARTS: readonly string[] = SCALE_OUT ? SCALE_OUT_PARTS : ALL_PARTS
const only = new Set((args.get('only') ?? PARTS.join(',')).split(',').map((s) => s.trim()))
for (const p of only) {
  if (!PARTS.includes(p)) {
    process.stderr.write(`bench: --only: unknown part ${p} (parts: ${PARTS.join(', ')})\n`)
    process.exit(2)
  }
}
const runs = (p: Part) => only.has(p)

const here = dirname(fileURLToPath(import.meta.url))
// bench/ when run with tsx, dist/bench/ when compiled.
const root = resolve(here, '..').replace(/[\\/]dist$/, '')
const benchDir = join(root, 'bench')
const wrkDir = join(benchDir, 'wrk')
// --server=<file>: benchmark another build of the server (an experiment); default the bundle that
// `npm start` runs, dist/server.bundle.js (scripts/bundle.mjs).
const serverJs = resolve(args.get('server') ?? join(root, 'dist', 'server.bundle.js'))
/** The same build with fsync off: its bundle beside a bundle, else the compiled bench entry. */
const noFsyncJs = serverJs.endsWith('server.bundle.js')
  ? join(dirname(serverJs), 'no-fsync-server.bundle.js')
  : join(dirname(serverJs), 'bench', 'no-fsync-server.js')
const tsxImport = ['--import', 'tsx']

const t0 = performance.now()
const log = (msg: string) => process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`)

const CLIENT_ID = 'bench-client'
const CLIENT_SECRET = randomBytes(32).toString('base64url')
const BASIC = `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`
// Failed client authentications are counted from the attempt until it succeeds, so 32 concurrent
// token requests of one client from one address need the failure budgets raised too.
const RATE_LIMITS =
  'getProjects=100000000, submitLead=100000000, getLeads=100000000, issueToken=100000000, authFailures=100000000, authFailuresPerAddress=100000000'
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100
const wrkVersion = (() => {
  const v = spawnSync(WRK, ['-v'], { encoding: 'utf8' })
  return `${v.stdout ?? ''}${v.stderr ?? ''}`.split('\n')[0]?.trim() ?? 'unknown'
})()

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

export interface Server {
  name: string
  port: number
  child: ChildProcess
  pid: number
  logFile: string
  /** Spawn to first answered request, ms. */
  startupMs: number
}

export interface Reply {
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

async function stopServer(s: Server | undefined): Promise<void> {
  if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return
  const exited = once(s.child, 'exit')
  s.child.kill('SIGTERM')
  const t = setTimeout(() => s.child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(t)
}

function apiEnv(port: number, dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? os.tmpdir(),
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    RATE_LIMITS,
    // Two API builds run side by side (fsync on and off): no metrics listener, whose port they would share.
    METRICS_PORT: '0',
    BOOTSTRAP_CLIENT_ID: CLIENT_ID,
    BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
    ...extra,
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
/** The fsync-delay shim (bench/fsync-delay.c) is preloaded into the servers: its delay, µs, else 0. */
const fsyncShimUs = childEnv.LD_PRELOAD ? Number(childEnv.FSYNC_DELAY_US ?? 0) || 0 : 0
const cpuProf = args.has('cpu-prof')
const profDir = join(benchDir, 'profiles')

/** Node's flags for an API process: --cpu-prof's (the folder made on first use), then --api-node-args. */
function apiFlags(name: string): string[] {
  if (!cpuProf) return apiNodeArgs
  if (!existsSync(profDir)) {
    mkdirSync(profDir, { recursive: true })
    writeFileSync(join(profDir, '.gitignore'), '*\n')
  }
  return ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`, ...apiNodeArgs]
}

function startApi(name: string, dataDir: string, port: number, logFile: string, append = false, script = serverJs) {
  return startServer(name, [...apiFlags(name), script], apiEnv(port, dataDir), port, logFile, PROBE, append)
}

/**
 * Where a run's results go: --out, else the reference file (results.json, results-scale-out.json)
 * that the README quotes; a partial or experimental run (--only, --server, --cpu-prof, ...) never
 * overwrites it, and goes to <reference>-<time>.json (git-ignored) instead.
 */
function resultsFile(reference: string, when: string): string {
  if (args.has('out')) return resolve(args.get('out') ?? '')
  const experimental = ['only', 'server', 'cpu-prof', 'child-env', 'api-node-args', 'pg-flush-delay-us'].some((a) => args.has(a))
  return join(benchDir, experimental ? `${reference}-${when.replace(/[:.]/g, '-')}.json` : `${reference}.json`)
}

/** Wall time of one MCP initialize request (a new session, as an agent's first call), ms. */
async function mcpInitializeMs(port: number): Promise<number> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'studio-bench', version: '1' } },
  })
  const started = performance.now()
  const reply = await request(port, {
    method: 'POST',
    path: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body,
  })
  const ms = performance.now() - started
  if (reply.status !== 200) throw new Error(`/mcp initialize: ${reply.status} ${reply.body.toString().slice(0, 300)}`)
  return ms
}

/** Resident set size of a process, bytes (VmRSS). */
function rssOf(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m?.[1] ? Number(m[1]) * 1024 : Number.NaN
}

/** CPU time of a process (all its threads), seconds, from /proc/<pid>/stat: user and system. */
function cpuOf(pid: number): { user: number; sys: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // After the command: state is field 3; utime and stime are fields 14 and 15.
  return { user: Number(fields[11]) / CLK_TCK, sys: Number(fields[12]) / CLK_TCK }
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
  const at = (q: number) => times[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))] ?? Number.NaN
  return { p50Us: at(0.5), p99Us: at(0.99) }
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
 * its memory reducer runs on an idle heap (~20-30 s later on Node 20, seen up to 35 s on this
 * project's machine), so both figures are kept: the one 2 s after start-up and the settled one
 * (waits for a drop of >= 8 MB, at most `maxMs`).
 */
async function idleRss(pid: number, maxMs = 60_000): Promise<IdleRss> {
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
// Load generation: wrk

const runTag = randomBytes(3).toString('hex')
let leadCounter = 0
/** A unique, valid lead (for seeding through the API; wrk's runs build theirs in submit-lead.lua). */
function nextLead(): string {
  const n = ++leadCounter
  return JSON.stringify({
    name: `Bench Lead ${n}`,
    email: `lead${n}.${runTag}@example.com`,
    phone: `+44 20 ${String(n).padStart(8, '0')}`,
  })
}

/** What wrk sends: a script in bench/wrk/ and the URL's path. */
export interface Load {
  /** get: GET, optional Authorization; issue-token: form POST with Basic auth; submit-lead: a unique JSON lead per request. */
  script: 'get' | 'issue-token' | 'submit-lead'
  path: string
  /** The Authorization header value, if any. */
  authorization?: string
  /** submit-lead: send `consent: true` (what an anonymous submission must carry). */
  consent?: boolean
}

/** The line done() in bench/wrk/common.lua prints. */
interface WrkReport {
  requests: number
  durationUs: number
  bytes: number
  errors: { connect: number; read: number; write: number; timeout: number; status: number }
  latencyUs: { p50: number; p90: number; p99: number; max: number; mean: number }
  cpuTicks: { user: number; system: number }
}

/** One measured wrk run against one server. */
export interface Figures {
  /** Responses completed in the window (any status). */
  requests: number
  /** Responses with status > 399 (wrk's count; these routes never answer 1xx/3xx here). */
  non2xx: number
  /** Socket errors: connect, read, write, timeout. */
  socketErrors: number
  /** 2xx responses per second of the measured window. */
  rps: number
  /** Latency of every response, µs (wrk's histogram). */
  p50Us: number
  p90Us: number
  p99Us: number
  maxUs: number
  /** Server CPU time (user + system, all threads) per completed response, µs. */
  cpuUsPerReq: number
  /** The system (kernel) part of it, µs. */
  sysUsPerReq: number
  /** wrk's own CPU time per completed response, µs. */
  wrkCpuUsPerReq: number
  /** CPU time of another process the run depends on (Redis), per completed response, µs; NaN: none. */
  watchedCpuUsPerReq: number
  /** Cores used during the run: the server, wrk, and everything else on the machine. */
  serverCores: number
  wrkCores: number
  otherCores: number
  /** Bytes received per response, headers included. */
  bytesPerResponse: number
  durationS: number
  /** A contender's own counters (Contender.counters), their change over the run per response. */
  counted: Record<string, number>
}

let wrkRuns = 0

/**
 * Runs `wrk -t1 -c<connections> -d<seconds>s --latency -s bench/wrk/<script>.lua` against a
 * server. The server's CPU is read from /proc/<pid>/stat just before wrk starts and just after
 * it exits, so the window is the run (plus wrk's start and exit, when the server is idle); a
 * warm-up is a run of its own, outside the window. wrk's CPU comes from its own /proc/self/stat,
 * read by done() after its threads have finished.
 */
async function runWrk(server: Server, load: Load, seconds: number, connections = CONNECTIONS, watch?: () => number): Promise<Figures> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LUA_PATH: `${wrkDir}/?.lua;;`,
    BENCH_LEAD_TAG: `${runTag}-${++wrkRuns}`,
    ...(load.authorization && { BENCH_AUTHORIZATION: load.authorization }),
    ...(load.consent && { BENCH_CONSENT: '1' }),
  }
  const argv = [
    '-t1',
    `-c${connections}`,
    `-d${seconds}s`,
    '--timeout',
    '10s',
    '--latency',
    '-s',
    join(wrkDir, `${load.script}.lua`),
    `http://127.0.0.1:${server.port}${load.path}`,
  ]
  const cpu0 = cpuOf(server.pid)
  const watched0 = watch ? cpuOf(watch()) : undefined
  const busy0 = machineBusy()
  const w0 = performance.now()
  const child = spawn(WRK as string, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let out = ''
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    out += s
  })
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    out += s
  })
  const killer = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000)
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null]
  const wall = (performance.now() - w0) / 1000
  const cpu1 = cpuOf(server.pid)
  const watched1 = watch ? cpuOf(watch()) : undefined
  const sys = cpu1.sys - cpu0.sys
  const cpu = cpu1.user - cpu0.user + sys
  const busy = machineBusy() - busy0
  clearTimeout(killer)
  children.delete(child)
  const line = out.split('\n').find((l) => l.startsWith('BENCH_WRK_JSON '))
  if (code !== 0 || !line) {
    throw new Error(`wrk against ${server.name} failed (${code ?? signal}): ${WRK} ${argv.join(' ')}\n${out.trim()}`)
  }
  const r = JSON.parse(line.slice('BENCH_WRK_JSON '.length)) as WrkReport
  const wrkCpu = r.cpuTicks.user >= 0 ? (r.cpuTicks.user + r.cpuTicks.system) / CLK_TCK : Number.NaN
  const durationS = r.durationUs / 1e6
  const non2xx = r.errors.status
  const perReq = (s: number) => (r.requests > 0 ? (s / r.requests) * 1e6 : Number.NaN)
  return {
    requests: r.requests,
    non2xx,
    socketErrors: r.errors.connect + r.errors.read + r.errors.write + r.errors.timeout,
    rps: (r.requests - non2xx) / durationS,
    p50Us: r.latencyUs.p50,
    p90Us: r.latencyUs.p90,
    p99Us: r.latencyUs.p99,
    maxUs: r.latencyUs.max,
    cpuUsPerReq: perReq(cpu),
    sysUsPerReq: perReq(sys),
    wrkCpuUsPerReq: perReq(wrkCpu),
    watchedCpuUsPerReq: watched0 && watched1 ? perReq(watched1.user - watched0.user + watched1.sys - watched0.sys) : Number.NaN,
    serverCores: cpu / wall,
    // Over wrk's own window, not the slightly longer spawn-to-exit one: errs on the high side.
    wrkCores: wrkCpu / durationS,
    otherCores: Math.max(0, (busy - cpu - wrkCpu) / wall),
    bytesPerResponse: r.requests > 0 ? Math.round(r.bytes / r.requests) : Number.NaN,
    durationS,
    counted: {},
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? (s[mid] ?? Number.NaN) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2
}

type Measured = { [K in keyof Figures]: Figures[K] extends number ? K : never }[keyof Figures]

function summarise(rounds: Figures[]) {
  const med = (k: Measured) => median(rounds.map((r) => r[k]))
  return {
    rps: med('rps'),
    cpuUsPerReq: med('cpuUsPerReq'),
    sysUsPerReq: med('sysUsPerReq'),
    p50Us: med('p50Us'),
    p90Us: med('p90Us'),
    p99Us: med('p99Us'),
    /** The largest of the rounds. */
    maxUs: Math.max(...rounds.map((r) => r.maxUs)),
    non2xx: rounds.reduce((a, r) => a + r.non2xx, 0),
    socketErrors: rounds.reduce((a, r) => a + r.socketErrors, 0),
    serverCores: med('serverCores'),
    wrkCores: med('wrkCores'),
    otherCores: med('otherCores'),
    wrkCpuUsPerReq: med('wrkCpuUsPerReq'),
    watchedCpuUsPerReq: med('watchedCpuUsPerReq'),
    bytesPerResponse: med('bytesPerResponse'),
    counted: Object.fromEntries(
      Object.keys(rounds[0]?.counted ?? {}).map((k) => [k, median(rounds.map((r) => r.counted[k] ?? Number.NaN))]),
    ),
    rounds,
  }
}
export type Summary = ReturnType<typeof summarise>

/** The subject (first contender) against one baseline: medians of the per-round ratios. */
export interface Versus {
  /** Subject req/s ÷ baseline req/s. */
  rps: number
  /** Subject server CPU µs/req ÷ baseline server CPU µs/req. */
  cpuPerReq: number
  rpsPerRound: number[]
  cpuPerReqPerRound: number[]
}

export interface OpResult {
  /** By server name; the first is the subject (the API). */
  servers: Record<string, Summary>
  /** The subject against each baseline, by the baseline's name. */
  vs: Record<string, Versus>
}

const clean = (s: Summary | undefined) => s !== undefined && s.non2xx === 0 && s.socketErrors === 0

const fmt = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '-')
const ms = (us: number, d = 2) => fmt(us / 1000, d)
const line = (f: Figures) =>
  `${fmt(f.rps)} req/s, p50 ${ms(f.p50Us)} ms, p99 ${ms(f.p99Us)} ms, non-2xx ${f.non2xx}, socket errors ${f.socketErrors}; ` +
  `server ${fmt(f.cpuUsPerReq, 1)} µs CPU/req, wrk ${fmt(f.wrkCpuUsPerReq, 1)} µs/req; cores server ${fmt(f.serverCores, 2)} / wrk ${fmt(f.wrkCores, 2)} / other ${fmt(f.otherCores, 2)}`

export interface Contender {
  name: string
  server: Server
  load: Load
  /** Another process whose CPU each run reads too (Redis). */
  watch?: () => number
  /**
   * Counters of the contender's own (PostgreSQL's transactions, say), read just before and just
   * after each measured run; their changes per response go into the run's Figures.counted.
   */
  counters?: () => Promise<Record<string, number>>
}

let generatorWarnings = 0

/**
 * A warm-up run per server, then `ROUNDS` rounds of (subject, baselines...), each a measured
 * wrk run. The warm-up must be all 2xx: anything else means the setup (token, body, limits) is
 * wrong, and no measurement would mean anything.
 */
async function compare(op: string, contenders: Contender[]): Promise<OpResult> {
  log(`${op}: warm-up ${WARMUP} s each: ${contenders.map((c) => c.name).join(', ')}`)
  for (const c of contenders) {
    const w = await runWrk(c.server, c.load, WARMUP)
    if (w.non2xx > 0 || w.socketErrors > 0 || w.requests === 0) {
      throw new Error(
        `${op}: warm-up against ${c.name}: ${w.non2xx} non-2xx and ${w.socketErrors} socket errors in ${w.requests} responses; see ${relative(root, c.server.logFile)}`,
      )
    }
  }
  const figures = contenders.map(() => [] as Figures[])
  for (let i = 1; i <= ROUNDS; i++) {
    for (const [k, c] of contenders.entries()) {
      const before = await c.counters?.()
      const f = await runWrk(c.server, c.load, DURATION, CONNECTIONS, c.watch)
      const after = await c.counters?.()
      if (before && after) {
        for (const [key, v] of Object.entries(after)) f.counted[key] = (v - (before[key] ?? Number.NaN)) / f.requests
      }
      figures[k]?.push(f)
      const counted = Object.entries(f.counted).map(([key, v]) => `; ${key} ${fmt(v, 3)}/req`)
      log(`${op} round ${i}/${ROUNDS} ${c.name.padEnd(13)} ${line(f)}${counted.join('')}`)
      if (f.wrkCores > 0.85) {
        generatorWarnings++
        log(`WARNING: wrk used ${fmt(f.wrkCores, 2)} cores: the generator may be the bottleneck of this run`)
      }
    }
  }
  const out: OpResult = { servers: {}, vs: {} }
  for (const [k, c] of contenders.entries()) out.servers[c.name] = summarise(figures[k] ?? [])
  const subject = figures[0] ?? []
  for (const [k, c] of contenders.entries()) {
    if (k === 0) continue
    const base = figures[k] ?? []
    const rpsPerRound = subject.map((f, i) => f.rps / (base[i]?.rps ?? Number.NaN))
    const cpuPerReqPerRound = subject.map((f, i) => f.cpuUsPerReq / (base[i]?.cpuUsPerReq ?? Number.NaN))
    out.vs[c.name] = { rps: median(rpsPerRound), cpuPerReq: median(cpuPerReqPerRound), rpsPerRound, cpuPerReqPerRound }
    log(
      `${op}: ${contenders[0]?.name} ÷ ${c.name}: req/s ${fmt(median(rpsPerRound), 2)}x, server CPU/req ${fmt(median(cpuPerReqPerRound), 2)}x`,
    )
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

/**
 * The one place the bench uses the server's code: the memory run's 100,000-lead log is written
 * through the store's own migrations and the leads repository, so it is exactly what the API
 * writes and reads. Nothing else in bench/ imports server code.
 */
async function seedLeadLog(dataDir: string, count: number): Promise<void> {
  const [{ openStore }, { LeadsRepository }] = await Promise.all([
    import('../plugins/store/open.js'),
    import('../features/leads/repository.js'),
  ])
  const store = await openStore({ dataDir, databaseUrl: undefined, dbPoolMax: 1 })
  const leads = new LeadsRepository(store)
  try {
    const base = Date.now() - count * 1000
    for (let from = 0; from < count; from += 2000) {
      const batch = Array.from({ length: Math.min(2000, count - from) }, (_, k) => {
        const i = from + k
        return {
          id: randomUUID(),
          fields: { name: `Memory Lead ${i}`, email: `memory.lead.${i}@example.com`, phone: `+44 20 ${String(i).padStart(8, '0')}` },
          received_at: new Date(base + i * 1000).toISOString(),
          client_id: CLIENT_ID,
        }
      })
      await leads.insertBatch(batch, new Map(), new Date(0).toISOString())
    }
  } finally {
    await store.close()
  }
}

// ---------------------------------------------------------------------------------------------
// Main

export interface Target {
  name: string
  target: string
  value: string
  /** null: not judged in this run (its condition, e.g. the fsync shim, does not hold). */
  pass: boolean | null
}

/**
 * The project's own build (tsc, the compiled spec, the MCP views), so the API starts from dist/
 * exactly as `npm start` would.
 */
function build(): void {
  if (!args.has('skip-build') && !args.has('server')) {
    log('building: npm run build (tsc and the server bundle, spec, UI views into dist/)')
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, encoding: 'utf8' })
    if (build.status !== 0) {
      const out = `${build.stdout}${build.stderr}`.trim().split('\n').slice(0, 20).join('\n')
      if (!existsSync(serverJs)) throw new Error(`the build failed and there is no ${relative(root, serverJs)}:\n${out}`)
      log(`WARNING: the build reported errors (tsc still emits JS); benchmarking dist/ as it is:\n${out}`)
    }
  }
  if (!existsSync(serverJs)) throw new Error(`${relative(root, serverJs)} is missing: run \`npm run build\` first`)
}

async function main(): Promise<void> {
  log(`load generator: ${WRK} (${wrkVersion}), -t1 -c${CONNECTIONS}, ${ROUNDS} rounds × ${DURATION} s after a ${WARMUP} s warm-up`)
  build()

  const loadBefore = os.loadavg()
  if ((loadBefore[0] ?? 0) > 0.5)
    log(`WARNING: load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')}: other work is running; figures will be noisy`)
  const tmp = mkdtempSync(join(os.tmpdir(), 'studio-bench-'))
  log(`temp folder ${tmp}`)
  const results: Record<string, unknown> = {}
  const fsync: Record<string, { p50Us: number; p99Us: number }> = { start: fsyncProbe(tmp) }
  results.fsync = fsync
  log(`disk: 4 KiB write + fdatasync p50 ${fmt(fsync.start?.p50Us ?? Number.NaN)} µs, p99 ${fmt(fsync.start?.p99Us ?? Number.NaN)} µs`)
  const ops: Record<string, OpResult> = {}
  const targets: Target[] = []
  const servers: (Server | undefined)[] = []

  try {
    // 2. The API, fresh data dir.
    const apiPort = await freePort()
    const api = await startApi('api', join(tmp, 'api-data'), apiPort, join(benchDir, 'api.log'))
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
      const bareHttp = await startServer(
        'node:http',
        [...tsxImport, join(benchDir, 'baseline-http.ts')],
        { PATH: process.env.PATH ?? '', PORT: String(httpPort), BODY_FILE: catalogueFile },
        httpPort,
        join(tmp, 'baseline-http.log'),
        '/',
      )
      servers.push(bareHttp)
      const fastifyPort = await freePort()
      const fastify = await startServer(
        'fastify',
        [...tsxImport, join(benchDir, 'baseline-fastify.ts')],
        {
          PATH: process.env.PATH ?? '',
          NODE_ENV: 'production',
          PORT: String(fastifyPort),
          CATALOGUE_FILE: catalogueFile,
          JWKS_FILE: jwksFile,
          ISSUER: issuer,
          LOG_FILE: join(tmp, 'baseline-fastify-requests.log'),
        },
        fastifyPort,
        join(tmp, 'baseline-fastify.log'),
        '/',
      )
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

      const load: Load = { script: 'get', path: '/project_metadata.json', authorization: bearer }
      ops.getProjects = await compare('getProjects', [
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
      ops.getLeads = await compare('getLeads', [
        { name: 'api', server: api, load: { script: 'get', path: '/leads.json', authorization: bearer } },
      ])
    }

    if (runs('issueToken')) {
      ops.issueToken = await compare('issueToken', [
        { name: 'api', server: api, load: { script: 'issue-token', path: '/api/token', authorization: BASIC } },
      ])
    }

    if (runs('submitLead')) {
      // The same build with fsync off, to price durability: bench/no-fsync-server.ts starts the
      // server with SQLite synchronous=OFF (no configuration variable can), and says so in its log.
      const unsafePort = await freePort()
      const unsafeLog = join(benchDir, 'api-fsync-off.log')
      const unsafe = await startApi('api-fsync-off', join(tmp, 'api-fsync-off-data'), unsafePort, unsafeLog, false, noFsyncJs)
      servers.push(unsafe)
      const unsafeBearer = `Bearer ${await token(unsafePort)}`
      const leadsPort = await freePort()
      const naiveDb = join(tmp, 'naive-leads.db')
      const naive = await startServer(
        'naive',
        [...tsxImport, join(benchDir, 'baseline-leads.ts')],
        { PATH: process.env.PATH ?? '', PORT: String(leadsPort), DB_FILE: naiveDb, NODE_ENV: 'production' },
        leadsPort,
        join(tmp, 'baseline-leads.log'),
        '/',
      )
      servers.push(naive)
      log(`submitLead: api with fsync off on ${unsafePort} (log ${relative(root, unsafeLog)}), naive durable leads on ${leadsPort}`)

      const dbs = { api: join(tmp, 'api-data', 'studio.db'), 'api-fsync-off': join(tmp, 'api-fsync-off-data', 'studio.db'), naive: naiveDb }
      const before = Object.fromEntries(Object.entries(dbs).map(([k, f]) => [k, countRows(f)]))
      fsync.beforeSubmitLead = fsyncProbe(tmp)
      ops.submitLead = await compare('submitLead', [
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
    if (runs('memory')) results.memory = await memoryRun(tmp, targets)
  } finally {
    await Promise.all(servers.map(stopServer))
    if (!args.has('keep')) rmSync(tmp, { recursive: true, force: true })
    else log(`kept ${tmp}`)
  }

  targets.unshift(...operationTargets(ops))
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
      generator: `${wrkVersion}: wrk -t1 -c${CONNECTIONS} -d${DURATION}s --timeout 10s --latency -s bench/wrk/<script>.lua`,
      childEnv,
      apiNodeArgs,
      connections: CONNECTIONS,
      durationS: DURATION,
      warmupS: WARMUP,
      rounds: ROUNDS,
      memoryLeads: MEMORY_LEADS,
      logSeed: LOG_SEED,
      cpuProf,
      clockTicksPerSecond: CLK_TCK,
    },
    notes: [
      'load: wrk (C, one thread) on the same 2 cores as the servers; warm-up runs are separate wrk runs, outside every measured window',
      'rps counts 2xx responses per second; latency (µs) is wrk’s histogram of every response; per server, figures are medians of the rounds (maxUs the largest), non2xx and socketErrors are totals',
      'non2xx is wrk’s count of statuses > 399 (these routes answer 200 or an error here); the scripts have no response() hook, which would cost wrk CPU on every request',
      'cpuUsPerReq: server CPU (utime + stime of all its threads, /proc/<pid>/stat) from just before wrk starts to just after it exits, ÷ responses completed; sysUsPerReq: the stime part (the kernel: sockets, fsync)',
      'wrkCpuUsPerReq / wrkCores: wrk’s own CPU (its /proc/self/stat, read in done()); otherCores: the rest of the machine (other processes, kernel) during the run',
      'vs: the first server of an operation (the API) ÷ each baseline, the median of the per-round ratios (each round runs them back to back)',
      'baselines: node:http serves the catalogue bytes with nothing else; fastify is bench/baseline-fastify.ts (Fastify 5, @fastify/jwt verifying the API’s EdDSA tokens with fast-jwt’s verified-token cache on, @fastify/rate-limit, response schema serialization, pino at info to a file with Fastify’s default request logging); naive is bench/baseline-leads.ts (one fsync per lead); api-fsync-off is the same API build started by bench/no-fsync-server.ts (SQLite synchronous=OFF)',
      "fsync: 4 KiB write + fdatasync latency of the temp folder's disk; group commit (submitLead) gains in proportion to it, so read the submitLead ratios against it",
      'operations run in the order getProjects, getLeads, issueToken, submitLead so getLeads reads a log of exactly logSeed leads',
      ...(generatorWarnings ? [`${generatorWarnings} run(s) had wrk above 0.85 cores: the generator may have limited them`] : []),
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
  const outFile = resultsFile('results', out.when)
  // Three decimals are plenty (CPU comes in 10 ms ticks, latency in µs) and keep the file readable.
  const round = (_key: string, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v)
  writeFileSync(outFile, `${JSON.stringify(out, round, 2)}\n`)
  log(`wrote ${relative(root, outFile)}`)
}

/** The per-operation targets; a target fails too when a run it rests on had errors. */
function operationTargets(ops: Record<string, OpResult>): Target[] {
  const out: Target[] = []
  const x = (v: number | undefined) => `${fmt(v ?? Number.NaN, 2)}x`
  const g = ops.getProjects
  if (g) {
    const api = g.servers.api
    const bare = g.servers['node:http']
    const fastify = g.servers.fastify
    const vsFastify = g.vs.fastify?.rps ?? Number.NaN
    const vsBare = g.vs['node:http']?.rps ?? Number.NaN
    const cpuVsBare = g.vs['node:http']?.cpuPerReq ?? Number.NaN
    out.push(
      {
        name: 'getProjects req/s ÷ hand-wired Fastify',
        target: '>= 1.5x',
        value: `${x(vsFastify)} (${fmt(api?.rps ?? Number.NaN)} vs ${fmt(fastify?.rps ?? Number.NaN)} req/s)`,
        pass: vsFastify >= 1.5 && clean(api) && clean(fastify),
      },
      {
        name: 'getProjects req/s ÷ bare node:http',
        target: '>= 0.45x',
        value: `${x(vsBare)} (${fmt(api?.rps ?? Number.NaN)} vs ${fmt(bare?.rps ?? Number.NaN)} req/s)`,
        pass: vsBare >= 0.45 && clean(api) && clean(bare),
      },
      {
        name: 'getProjects server CPU/req ÷ bare node:http',
        target: '<= 2.2x',
        value: `${x(cpuVsBare)} (${fmt(api?.cpuUsPerReq ?? Number.NaN, 1)} vs ${fmt(bare?.cpuUsPerReq ?? Number.NaN, 1)} µs)`,
        pass: cpuVsBare <= 2.2 && clean(api) && clean(bare),
      },
      {
        name: 'getProjects p99',
        target: '< 10 ms',
        value: `${ms(api?.p99Us ?? Number.NaN)} ms`,
        pass: (api?.p99Us ?? Number.POSITIVE_INFINITY) < 10_000 && clean(api),
      },
    )
  }
  const s = ops.submitLead
  if (s) {
    const api = s.servers.api
    const unsafe = s.servers['api-fsync-off']
    const naive = s.servers.naive
    const vsUnsafe = s.vs['api-fsync-off']?.rps ?? Number.NaN
    const vsNaive = s.vs.naive?.rps ?? Number.NaN
    out.push(
      {
        name: 'submitLead durable ÷ fsync off (same build)',
        target: '>= 0.85 (this disk, no fsync shim)',
        value: `${x(vsUnsafe)} (${fmt(api?.rps ?? Number.NaN)} vs ${fmt(unsafe?.rps ?? Number.NaN)} req/s)`,
        pass: fsyncShimUs > 0 ? null : vsUnsafe >= 0.85 && clean(api) && clean(unsafe),
      },
      {
        name: 'submitLead ÷ naive durable',
        target: '>= 2.5x (with the 250 µs fsync shim)',
        value: `${x(vsNaive)} (${fmt(api?.rps ?? Number.NaN)} vs ${fmt(naive?.rps ?? Number.NaN)} req/s${fsyncShimUs ? `, fsync +${fsyncShimUs} µs` : ''})`,
        pass: fsyncShimUs === 250 ? vsNaive >= 2.5 && clean(api) && clean(naive) : null,
      },
    )
  }
  const t = ops.issueToken?.servers.api
  if (t) out.push({ name: 'issueToken tokens/s', target: '>= 5000', value: fmt(t.rps), pass: t.rps >= 5000 && clean(t) })
  return out
}

async function memoryRun(tmp: string, targets: Target[]) {
  const dataDir = join(tmp, 'memory-data')
  const logFile = join(benchDir, 'api-memory.log')
  const port = await freePort()
  log(`memory run: storing ${MEMORY_LEADS} leads through the store (migrations first)`)
  await seedLeadLog(dataDir, MEMORY_LEADS)

  const api = await startApi('api-memory', dataDir, port, logFile, true)
  log(`memory run: restarted on ${MEMORY_LEADS} leads, first answered request after ${fmt(api.startupMs)} ms`)
  try {
    const bearer = await token(port)
    // The baseline is the settled idle RSS: measured 2 s after start-up, the start-up heap V8 has
    // not yet given back would absorb (and hide) the growth.
    log('memory run: waiting for idle RSS to settle (up to 60 s)')
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

    const fetchLog = (): Promise<{ bytes: number; ms: number; status: number }> =>
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

    try {
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
    } finally {
      clearInterval(sampler)
    }
    const afterRss = rssOf(api.pid)
    // Check once that the whole log comes back (parsed after sampling, so it cannot skew it).
    const check = (await request(port, { path: '/leads.json', headers: { authorization: `Bearer ${bearer}` } })).body
    const entries = (JSON.parse(check.toString()) as unknown[]).length
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
  } finally {
    await stopServer(api)
  }
}

function printTables(ops: Record<string, OpResult>, results: Record<string, unknown>, targets: Target[]): void {
  const rows: string[][] = [
    [
      'operation',
      'server',
      'req/s',
      'api÷ req/s',
      'µs CPU/req',
      'of it sys',
      'api÷ CPU/req',
      'p50 ms',
      'p99 ms',
      'max ms',
      'non-2xx',
      'sock err',
      'srv cores',
      'wrk cores',
      'wrk µs/req',
      'other',
      'B/resp',
    ],
  ]
  for (const [op, r] of Object.entries(ops)) {
    for (const [name, s] of Object.entries(r.servers)) {
      const vs = r.vs[name]
      rows.push([
        op,
        name,
        fmt(s.rps),
        vs ? `${fmt(vs.rps, 2)}x` : '',
        fmt(s.cpuUsPerReq, 1),
        fmt(s.sysUsPerReq, 1),
        vs ? `${fmt(vs.cpuPerReq, 2)}x` : '',
        ms(s.p50Us),
        ms(s.p99Us),
        ms(s.maxUs, 1),
        String(s.non2xx),
        String(s.socketErrors),
        fmt(s.serverCores, 2),
        fmt(s.wrkCores, 2),
        fmt(s.wrkCpuUsPerReq, 1),
        fmt(s.otherCores, 2),
        fmt(s.bytesPerResponse),
      ])
    }
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  const print = (r: string[]) => r.map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ')
  const out: string[] = []
  out.push('')
  out.push(
    `Studio API benchmark: ${os.cpus().length} CPUs, Node ${process.version}, wrk -t1 -c${CONNECTIONS}, ${ROUNDS} rounds × ${DURATION} s (medians)`,
  )
  out.push('api÷: the operation’s first row (the API) ÷ that row, median of the per-round ratios; CPU is the server’s, per response')
  out.push('')
  if (rows.length > 1) for (const r of rows) out.push(print(r))
  else out.push('(no operation measured)')
  const all = Object.values(ops).flatMap((r) => Object.values(r.servers).flatMap((s) => s.rounds))
  if (all.length) {
    const peak = Math.max(...all.map((f) => f.wrkCores))
    out.push(
      `generator: wrk used at most ${fmt(peak, 2)} cores in any measured run (one thread: near 1.00 it would be the limit)${peak > 0.85 ? ': CHECK' : ''}`,
    )
  }
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
  for (const t of targets) {
    const verdict = t.pass === null ? ' -- ' : t.pass ? 'PASS' : 'FAIL'
    out.push(
      `${verdict}  ${t.name.padEnd(tw)}  ${t.value.padEnd(vw)}  (target ${t.target}${t.pass === null ? '; not judged in this run' : ''})`,
    )
  }
  out.push('')
  process.stdout.write(`${out.join('\n')}\n`)
}

/** A child process of the bench's own making, killed if the bench is. */
function track(child: ChildProcess): void {
  children.add(child)
  child.once('exit', () => children.delete(child))
}

/** What the scale-out mode (bench/scale-out.ts) uses of this file. */
const bench = {
  args,
  track,
  only,
  log,
  build,
  root,
  benchDir,
  serverJs,
  tsxImport,
  childEnv,
  connections: CONNECTIONS,
  duration: DURATION,
  rounds: ROUNDS,
  warmup: WARMUP,
  rateLimits: RATE_LIMITS,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  basic: BASIC,
  probe: PROBE,
  wrkVersion,
  startServer,
  apiFlags,
  resultsFile,
  stopServer,
  apiEnv,
  freePort,
  request,
  token,
  runWrk,
  compare,
  cpuOf,
  fmt,
  ms,
  sleep,
}
export type Bench = typeof bench

const failed = (err: Error) => {
  log(`failed: ${err.stack ?? err.message}`)
  process.exit(1)
}
if (SCALE_OUT) {
  import('./scale-out.js').then((m) => m.scaleOut(bench)).catch(failed)
} else {
  main().catch(failed)
}
