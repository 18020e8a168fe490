// The bench's shared types: what every mode (bench/modes/) and helper (bench/lib/) passes around.
// Types only: no code, so any module may import it and nothing imports back.
import type { ChildProcess } from 'node:child_process'
import type { IncomingHttpHeaders } from 'node:http'

/** The modes of `npm run bench` (bench/run.ts dispatches on them). */
export type Mode = 'default' | 'scale-out' | 'backup' | 'ablation'

/** The command line, read once (bench/lib/options.ts). */
export interface Options {
  mode: Mode
  /** Every --name[=value] as given (true for a bare flag). */
  args: ReadonlyMap<string, string>
  /** Whole seconds per measured run (wrk takes whole seconds). */
  duration: number
  rounds: number
  connections: number
  /** The warm-up run before each server's rounds, s. */
  warmup: number
  /** The memory run's lead log (default mode), or the backup mode's. */
  leads: number
  /** The parts to run (--only), among the mode's parts. */
  only: ReadonlySet<string>
  skipBuild: boolean
  keep: boolean
  cpuProf: boolean
  /** The bundle to measure: --server, else dist/server.bundle.js. */
  serverJs: string
  /** The same build with fsync off (its bundle beside serverJs, else the compiled bench entry). */
  noFsyncJs: string
  /** Extra Node flags for the API processes (--api-node-args). */
  apiNodeArgs: readonly string[]
  /** Extra environment for the API and baseline processes (--child-env). */
  childEnv: Readonly<Record<string, string>>
}

/** A server process the bench started. */
export interface Server {
  name: string
  port: number
  child: ChildProcess
  pid: number
  logFile: string
  /** Spawn to first answered request, ms. */
  startupMs: number
}

/** An HTTP answer read whole. */
export interface Reply {
  status: number
  headers: IncomingHttpHeaders
  body: Buffer
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
export interface WrkReport {
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

/** The keys of Figures that hold a number. */
export type Measured = { [K in keyof Figures]: Figures[K] extends number ? K : never }[keyof Figures]

/** One server's rounds of an operation: medians (maxUs the largest; errors totals), and the rounds. */
export interface Summary {
  rps: number
  cpuUsPerReq: number
  sysUsPerReq: number
  p50Us: number
  p90Us: number
  p99Us: number
  /** The largest of the rounds. */
  maxUs: number
  non2xx: number
  socketErrors: number
  serverCores: number
  wrkCores: number
  otherCores: number
  wrkCpuUsPerReq: number
  watchedCpuUsPerReq: number
  bytesPerResponse: number
  counted: Record<string, number>
  rounds: Figures[]
}

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

/** A server in an operation's rounds, and what wrk sends it. */
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

export interface Target {
  name: string
  target: string
  value: string
  /** null: not judged in this run (its condition, e.g. the fsync shim, does not hold). */
  pass: boolean | null
}

export interface IdleRss {
  /** RSS 2 s after the first answered request, bytes. */
  early: number
  /** RSS once V8's idle memory reducer has shrunk the heap (or at the deadline), bytes. */
  settled: number
  /** When the settled figure was reached, ms after the first answer (undefined: no drop seen). */
  settledAtMs: number | undefined
}

/** fsync latency of a disk, µs. */
export interface FsyncProbe {
  p50Us: number
  p99Us: number
}
