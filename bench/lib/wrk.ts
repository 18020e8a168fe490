// The load generator: wrk (C, one thread, Lua scripts in bench/wrk/). Each run reads the server's
// CPU time around it and wrk reports its own, so every figure comes with its CPU cost and the
// generator's.
import { spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { onPath } from '../../features/backup/postgres.js'
import { CLK_TCK, cpuOf, machineBusy } from './measure.js'
import { wrkDir } from './paths.js'
import { track } from './processes.js'
import type { Figures, Load, Server, WrkReport } from './types.js'

/** wrk's path on PATH, else undefined. */
export const WRK = onPath('wrk')

/** Ends the bench with the way to install wrk when it is missing: checked before anything else. */
export function requireWrk(): string {
  if (!WRK) {
    process.stderr.write("bench: wrk not found; install Debian's wrk (apt-get install wrk)\n")
    process.exit(2)
  }
  return WRK
}

/** wrk's version line. */
export function wrkVersion(): string {
  const v = spawnSync(requireWrk(), ['-v'], { encoding: 'utf8' })
  return `${v.stdout ?? ''}${v.stderr ?? ''}`.split('\n')[0]?.trim() ?? 'unknown'
}

/** This bench run's tag, in every lead's email: leads are unique across runs and wrk runs. */
export const runTag = randomBytes(3).toString('hex')
let wrkRuns = 0

/**
 * Runs `wrk -t1 -c<connections> -d<seconds>s --latency -s bench/wrk/<script>.lua` against a
 * server. The server's CPU is read from /proc/<pid>/stat just before wrk starts and just after
 * it exits, so the window is the run (plus wrk's start and exit, when the server is idle); a
 * warm-up is a run of its own, outside the window. wrk's CPU comes from its own /proc/self/stat,
 * read by done() after its threads have finished. `watch`: the pid of another process whose CPU
 * the run reads too (Redis).
 */
export async function runWrk(server: Server, load: Load, seconds: number, connections: number, watch?: () => number): Promise<Figures> {
  const wrk = requireWrk()
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
  const child = spawn(wrk, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  track(child)
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
  const line = out.split('\n').find((l) => l.startsWith('BENCH_WRK_JSON '))
  if (code !== 0 || !line) {
    throw new Error(`wrk against ${server.name} failed (${code ?? signal}): ${wrk} ${argv.join(' ')}\n${out.trim()}`)
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
