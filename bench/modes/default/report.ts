// The default run's targets and its tables.
import * as os from 'node:os'
import { clean, GENERATOR_LIMIT } from '../../lib/compare.js'
import { columns, fmt, ms } from '../../lib/format.js'
import type { OpResult, Options, Target } from '../../lib/types.js'

/**
 * The per-operation targets; a target fails too when a run it rests on had errors. `fsyncShimUs`:
 * the delay the fsync shim (bench/fsync-delay.c) adds to the servers' every fsync, else 0.
 */
export function operationTargets(ops: Record<string, OpResult>, fsyncShimUs: number): Target[] {
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
        target: '>= 2x',
        value: `${x(vsFastify)} (${fmt(api?.rps ?? Number.NaN)} vs ${fmt(fastify?.rps ?? Number.NaN)} req/s)`,
        pass: vsFastify >= 2 && clean(api) && clean(fastify),
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

/** The targets' verdict lines. */
export function targetLines(targets: Target[]): string[] {
  const tw = Math.max(...targets.map((t) => t.name.length))
  const vw = Math.max(...targets.map((t) => t.value.length))
  return targets.map((t) => {
    const verdict = t.pass === null ? ' -- ' : t.pass ? 'PASS' : 'FAIL'
    return `${verdict}  ${t.name.padEnd(tw)}  ${t.value.padEnd(vw)}  (target ${t.target}${t.pass === null ? '; not judged in this run' : ''})`
  })
}

export function printTables(options: Options, ops: Record<string, OpResult>, results: Record<string, unknown>, targets: Target[]): void {
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
  const out: string[] = []
  out.push('')
  out.push(
    `Studio API benchmark: ${os.cpus().length} CPUs, Node ${process.version}, wrk -t1 -c${options.connections}, ${options.rounds} rounds × ${options.duration} s (medians)`,
  )
  out.push('api÷: the operation’s first row (the API) ÷ that row, median of the per-round ratios; CPU is the server’s, per response')
  out.push('')
  if (rows.length > 1) out.push(...columns(rows))
  else out.push('(no operation measured)')
  const all = Object.values(ops).flatMap((r) => Object.values(r.servers).flatMap((s) => s.rounds))
  if (all.length) {
    const peak = Math.max(...all.map((f) => f.wrkCores))
    out.push(
      `generator: wrk used at most ${fmt(peak, 2)} cores in any measured run (one thread: near 1.00 it would be the limit)${peak > GENERATOR_LIMIT ? ': CHECK' : ''}`,
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
  out.push(...targetLines(targets))
  out.push('')
  process.stdout.write(`${out.join('\n')}\n`)
}
