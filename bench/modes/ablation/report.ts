// The ablation's table: for each internal and each figure it can move, the figure with the
// internal (the control build) and with the stock part, and what the internal buys (gain %, the
// median of the per-round ratios); then the decision rule of issue 36: an internal stays where it
// buys 10 % or more on a figure of the performance table (or meets a correctness need, which no
// figure shows: the table says so for none); otherwise the stock part comes back.
import { columns, fmt } from '../../lib/format.js'
import { median } from '../../lib/measure.js'
import type { Figure, Internal } from './internals.js'
import { CONTROL, FLOOD_FSYNC_DELAY_US, type Samples } from './runs.js'

/** The rule's threshold, %. */
export const KEEP_AT_PCT = 10

interface Metric {
  figure: Figure
  key: string
  label: string
  unit: string
  /** req/s: more is better; CPU, latency, time, memory: less is. */
  higherIsBetter: boolean
  /** From the sample's unit to the table's. */
  scale: number
  decimals: number
}

const METRICS: readonly Metric[] = [
  { figure: 'getProjects', key: 'rps', label: 'getProjects req/s', unit: 'req/s', higherIsBetter: true, scale: 1, decimals: 0 },
  {
    figure: 'getProjects',
    key: 'cpuUsPerReq',
    label: 'getProjects server CPU/req',
    unit: 'µs',
    higherIsBetter: false,
    scale: 1,
    decimals: 1,
  },
  { figure: 'issueToken', key: 'rps', label: 'issueToken tokens/s', unit: 'req/s', higherIsBetter: true, scale: 1, decimals: 0 },
  {
    figure: 'issueToken',
    key: 'cpuUsPerReq',
    label: 'issueToken server CPU/req',
    unit: 'µs',
    higherIsBetter: false,
    scale: 1,
    decimals: 1,
  },
  { figure: 'submitLead', key: 'rps', label: 'submitLead (SQLite) req/s', unit: 'req/s', higherIsBetter: true, scale: 1, decimals: 0 },
  {
    figure: 'submitLead',
    key: 'cpuUsPerReq',
    label: 'submitLead (SQLite) server CPU/req',
    unit: 'µs',
    higherIsBetter: false,
    scale: 1,
    decimals: 1,
  },
  { figure: 'submitLead', key: 'p99Us', label: 'submitLead (SQLite) p99', unit: 'ms', higherIsBetter: false, scale: 1e-3, decimals: 2 },
  {
    figure: 'readsDuringFlood',
    key: 'rps',
    label: `getProjects during a lead flood, fsync +${FLOOD_FSYNC_DELAY_US / 1000} ms: req/s`,
    unit: 'req/s',
    higherIsBetter: true,
    scale: 1,
    decimals: 0,
  },
  {
    figure: 'readsDuringFlood',
    key: 'p99Us',
    label: `getProjects during a lead flood, fsync +${FLOOD_FSYNC_DELAY_US / 1000} ms: p99`,
    unit: 'ms',
    higherIsBetter: false,
    scale: 1e-3,
    decimals: 2,
  },
  {
    figure: 'readsDuringFlood',
    key: 'floodRps',
    label: `the flood's leads/s, fsync +${FLOOD_FSYNC_DELAY_US / 1000} ms`,
    unit: 'req/s',
    higherIsBetter: true,
    scale: 1,
    decimals: 0,
  },
  {
    figure: 'submitLeadPostgres',
    key: 'rps',
    label: 'submitLead (PostgreSQL) req/s',
    unit: 'req/s',
    higherIsBetter: true,
    scale: 1,
    decimals: 0,
  },
  {
    figure: 'submitLeadPostgres',
    key: 'cpuUsPerReq',
    label: 'submitLead (PostgreSQL) server CPU/req',
    unit: 'µs',
    higherIsBetter: false,
    scale: 1,
    decimals: 1,
  },
  {
    figure: 'startup',
    key: 'firstAnswerMs',
    label: 'start-up, first answered request',
    unit: 'ms',
    higherIsBetter: false,
    scale: 1,
    decimals: 0,
  },
  { figure: 'startup', key: 'idleRssSettledMB', label: 'idle RSS, settled', unit: 'MB', higherIsBetter: false, scale: 1, decimals: 1 },
  {
    figure: 'npmStart',
    key: 'firstStartMs',
    label: 'npm start, first (no dist/)',
    unit: 's',
    higherIsBetter: false,
    scale: 1e-3,
    decimals: 1,
  },
  { figure: 'npmStart', key: 'secondStartMs', label: 'npm start, second', unit: 's', higherIsBetter: false, scale: 1e-3, decimals: 2 },
]

export interface Row {
  internal: string
  figure: string
  unit: string
  /** Medians of the rounds, in `unit`. */
  withInternal: number
  stock: number
  /** What the internal buys, %: positive when the figure is better with it (median of the per-round ratios). */
  gainPct: number
  /** The per-round gains, %. */
  gainPctPerRound: number[]
}

export interface Decision {
  internal: string
  /** The figure where the internal buys most, and how much. */
  bestFigure: string | null
  bestGainPct: number | null
  verdict: string
}

export function rows(internals: readonly Internal[], samples: Samples): Row[] {
  const out: Row[] = []
  for (const internal of internals) {
    for (const metric of METRICS) {
      if (!internal.figures.includes(metric.figure)) continue
      const byBuild = samples[metric.figure]
      const mine = byBuild?.[CONTROL]?.[metric.key]
      const theirs = byBuild?.[internal.name]?.[metric.key]
      if (!mine || !theirs) continue
      // Round i of the control against round i of the stock build: measured back to back.
      const gains = mine.map((m, i) => {
        const s = theirs[i] ?? Number.NaN
        return ((metric.higherIsBetter ? m / s : s / m) - 1) * 100
      })
      out.push({
        internal: internal.name,
        figure: metric.label,
        unit: metric.unit,
        withInternal: Number((median(mine) * metric.scale).toFixed(metric.decimals)),
        stock: Number((median(theirs) * metric.scale).toFixed(metric.decimals)),
        gainPct: Number(median(gains).toFixed(1)),
        gainPctPerRound: gains.map((g) => Number(g.toFixed(1))),
      })
    }
  }
  return out
}

export function decisions(internals: readonly Internal[], table: Row[]): Decision[] {
  return internals.map((internal) => {
    const mine = table.filter((r) => r.internal === internal.name && Number.isFinite(r.gainPct))
    if (mine.length === 0) return { internal: internal.name, bestFigure: null, bestGainPct: null, verdict: 'not measured in this run' }
    const best = mine.reduce((a, b) => (b.gainPct > a.gainPct ? b : a))
    // What it costs elsewhere, said beside the verdict: the rule reads the best figure, a reader both.
    const costs = mine.filter((r) => r.gainPct <= -KEEP_AT_PCT).map((r) => `${fmt(r.gainPct, 1)} % on ${r.figure}`)
    const verdict =
      (best.gainPct >= KEEP_AT_PCT
        ? `keep: buys ${fmt(best.gainPct, 1)} % on ${best.figure} (comment in the code pointing at this figure)`
        : `stock part back: at most ${fmt(best.gainPct, 1)} % (${best.figure}), under ${KEEP_AT_PCT} %`) +
      (costs.length ? `; but ${costs.join(', ')}` : '')
    return { internal: internal.name, bestFigure: best.figure, bestGainPct: best.gainPct, verdict }
  })
}

export function printTable(table: Row[], verdicts: Decision[], header: string): void {
  const out = [
    '',
    header,
    'gain: what the internal buys over its stock part, median of the per-round ratios (positive: better with it)',
    '',
  ]
  out.push(
    ...columns([
      ['internal', 'figure', 'with internal', 'stock', 'gain %', 'per round'],
      ...table.map((r) => [
        r.internal,
        r.figure,
        `${r.withInternal} ${r.unit}`,
        `${r.stock} ${r.unit}`,
        fmt(r.gainPct, 1),
        r.gainPctPerRound.map((g) => fmt(g, 1)).join(' '),
      ]),
    ]),
  )
  out.push('', `Decision (keep where it buys >= ${KEEP_AT_PCT} % on a figure of the performance table):`)
  for (const d of verdicts) out.push(`  ${d.internal.padEnd(22)} ${d.verdict}`)
  out.push('')
  process.stdout.write(`${out.join('\n')}\n`)
}
