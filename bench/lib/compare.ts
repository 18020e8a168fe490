// Servers measured side by side: a warm-up per server, then rounds of (subject, baselines...),
// each a measured wrk run; per server the medians of its rounds, and the subject against each
// other server as the median of the per-round ratios (each round runs them back to back, so a
// machine that drifts moves both sides of a ratio alike).
import { relative } from 'node:path'
import { fmt, ms } from './format.js'
import { log } from './log.js'
import { median } from './measure.js'
import { root } from './paths.js'
import type { Contender, Figures, Measured, OpResult, Options, Summary } from './types.js'
import { runWrk } from './wrk.js'

/** Above this share of a core, the one-thread generator may be what limits a run. */
export const GENERATOR_LIMIT = 0.85

/** One line of a measured run. */
export const runLine = (f: Figures): string =>
  `${fmt(f.rps)} req/s, p50 ${ms(f.p50Us)} ms, p99 ${ms(f.p99Us)} ms, non-2xx ${f.non2xx}, socket errors ${f.socketErrors}; ` +
  `server ${fmt(f.cpuUsPerReq, 1)} µs CPU/req, wrk ${fmt(f.wrkCpuUsPerReq, 1)} µs/req; cores server ${fmt(f.serverCores, 2)} / wrk ${fmt(f.wrkCores, 2)} / other ${fmt(f.otherCores, 2)}`

export function summarise(rounds: Figures[]): Summary {
  const med = (k: Measured) => median(rounds.map((r) => r[k]))
  return {
    rps: med('rps'),
    cpuUsPerReq: med('cpuUsPerReq'),
    sysUsPerReq: med('sysUsPerReq'),
    p50Us: med('p50Us'),
    p90Us: med('p90Us'),
    p99Us: med('p99Us'),
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

/** No error in any of its rounds. */
export const clean = (s: Summary | undefined): boolean => s !== undefined && s.non2xx === 0 && s.socketErrors === 0

/** The measured runs, of all operations, in which wrk used more than GENERATOR_LIMIT of a core. */
export const generatorWarnings = (ops: Record<string, OpResult>): number =>
  Object.values(ops)
    .flatMap((r) => Object.values(r.servers).flatMap((s) => s.rounds))
    .filter((f) => f.wrkCores > GENERATOR_LIMIT).length

/**
 * A warm-up run per server, then `options.rounds` rounds of (subject, baselines...), each a
 * measured wrk run. The warm-up must be all 2xx: anything else means the setup (token, body,
 * limits) is wrong, and no measurement would mean anything. `rotate`: each round starts one
 * server further on (round 2: baselines..., subject), so that no server always runs first
 * (the ablation, where the servers are alike).
 */
export async function compare(options: Options, op: string, contenders: Contender[], { rotate = false } = {}): Promise<OpResult> {
  const { warmup, rounds, duration, connections } = options
  log(`${op}: warm-up ${warmup} s each: ${contenders.map((c) => c.name).join(', ')}`)
  for (const c of contenders) {
    const w = await runWrk(c.server, c.load, warmup, connections)
    if (w.non2xx > 0 || w.socketErrors > 0 || w.requests === 0) {
      throw new Error(
        `${op}: warm-up against ${c.name}: ${w.non2xx} non-2xx and ${w.socketErrors} socket errors in ${w.requests} responses; see ${relative(root, c.server.logFile)}`,
      )
    }
  }
  const figures = contenders.map(() => [] as Figures[])
  for (let i = 1; i <= rounds; i++) {
    const shift = rotate ? (i - 1) % contenders.length : 0
    const order = contenders.map((_, j) => (j + shift) % contenders.length)
    for (const k of order) {
      const c = contenders[k] as Contender
      const before = await c.counters?.()
      const f = await runWrk(c.server, c.load, duration, connections, c.watch)
      const after = await c.counters?.()
      if (before && after) {
        for (const [key, v] of Object.entries(after)) f.counted[key] = (v - (before[key] ?? Number.NaN)) / f.requests
      }
      figures[k]?.push(f)
      const counted = Object.entries(f.counted).map(([key, v]) => `; ${key} ${fmt(v, 3)}/req`)
      log(`${op} round ${i}/${rounds} ${c.name.padEnd(13)} ${runLine(f)}${counted.join('')}`)
      if (f.wrkCores > GENERATOR_LIMIT) {
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
