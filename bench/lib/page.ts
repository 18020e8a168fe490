// docs/performance.md's figures, rendered from the latest results of each mode (bench/results/):
// the tables between its markers are this module's output, nothing else (`npm run
// docs:performance`, and each full run of the bench, rewrite them; test/pure/performance-page.test.ts
// checks that the page is the one the results render).
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fmt } from './format.js'
import { resultsDir } from './paths.js'
import type { OpResult, Target } from './types.js'

export const START = '<!-- figures: rendered by `npm run docs:performance` from bench/results/; do not edit by hand -->'
export const END = '<!-- end of figures -->'
/** bench/README.md shows the ablation's table alone, between these. */
export const ABLATION_START =
  '<!-- ablation: rendered by `npm run docs:performance` from bench/results/ablation.json; do not edit by hand -->'
export const ABLATION_END = '<!-- end of the ablation -->'

type Json = Record<string, unknown>

/** A mode's latest results, or undefined when it has none yet. */
export function readResults(mode: string, dir = resultsDir): Json | undefined {
  const file = join(dir, `${mode}.json`)
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Json) : undefined
}

const n = (x: number | undefined, d = 0) =>
  x === undefined ? '–' : Number(x.toFixed(d)).toLocaleString('en-GB', { maximumFractionDigits: d })
const us = (x: number | undefined) => (x === undefined ? '–' : `${n(x, x < 100 ? 1 : 0)} µs`)
const msOf = (x: number | undefined) => (x === undefined ? '–' : `${n(x / 1000, 2)} ms`)
const ratio = (x: number | undefined) => (x === undefined ? '' : `${fmt(x, 2)}×`)
/** When, to the minute, UTC. */
const when = (iso: unknown) => (typeof iso === 'string' ? `${iso.slice(0, 16).replace('T', ' ')} UTC` : 'unknown')
/** Text for a table cell: no markup of its own, no column break. */
const cell = (text: string) => text.replaceAll('<', '&lt;').replaceAll('|', '\\|')
const verdict = (t: Target) => (t.pass === null ? 'not judged' : t.pass ? '**met**' : '**not met**')

function targets(list: Target[]): string[] {
  return [
    '| target | value | result |',
    '|---|---|---|',
    ...list.map((t) => `| ${cell(`${t.name}: ${t.target}`)} | ${cell(t.value)} | ${verdict(t)} |`),
  ]
}

/** The table of an operation's servers: req/s, the first server ÷ each, server CPU per response, p50, p99. */
function servers(ops: Record<string, OpResult>, names: Record<string, string>): string[] {
  const out = [
    '| operation | server | req/s | first ÷ it | server CPU/response (of it kernel) | p50 | p99 |',
    '|---|---|---|---|---|---|---|',
  ]
  for (const [op, r] of Object.entries(ops)) {
    for (const [i, [name, s]] of Object.entries(r.servers).entries()) {
      const vs = r.vs[name]
      out.push(
        `| ${i === 0 ? `\`${op}\`` : ''} | ${names[name] ?? name} | ${n(s.rps)} | ${ratio(vs?.rps)} | ${us(s.cpuUsPerReq)} (${us(s.sysUsPerReq)}) | ${msOf(s.p50Us)} | ${msOf(s.p99Us)} |`,
      )
    }
  }
  return out
}

function machine(r: Json): string {
  const m = r.machine as { cpus?: number; cpuModel?: string; node?: string } | undefined
  return `${m?.cpuModel ?? 'unknown CPU'}, ${m?.cpus ?? '?'} CPUs, Node ${m?.node ?? '?'}`
}

function defaultRun(r: Json | undefined): string[] {
  if (!r) return ['## `npm run bench`', '', 'No committed results yet.']
  const s = r.settings as { rounds: number; durationS: number; connections: number; childEnv?: Record<string, string> }
  const env = Object.entries(s.childEnv ?? {})
  const command = `npm run bench${env.length ? ` -- --child-env="${env.map(([k, v]) => `${k}=${v}`).join(';')}"` : ''}`
  const st = r.startup as { apiFirstAnswerMs: number; apiIdleRssSettledMB: number; apiIdleRssEarlyMB: number; mcpFirstInitializeMs: number }
  const mem = r.memory as { leads: number; peakGrowthMB: number; peakRssMB: number } | undefined
  return [
    `## The API against its baselines: \`${command}\``,
    '',
    `Made ${when(r.when)} on ${machine(r)}: ${s.rounds} rounds × ${s.durationS} s, wrk at ${s.connections} connections; medians of the rounds ("first ÷ it": the API ÷ that server, the median of the per-round ratios).`,
    '',
    ...servers(r.ops as Record<string, OpResult>, {
      api: 'API',
      'node:http': 'bare node:http',
      fastify: 'hand-wired Fastify',
      'api-fsync-off': 'same API, fsync off',
      naive: 'naive durable',
    }),
    '',
    `Start-up: first answered request ${n(st?.apiFirstAnswerMs)} ms after spawn; idle RSS ${st?.apiIdleRssSettledMB} MB settled (${st?.apiIdleRssEarlyMB} MB 2 s after start-up); the first \`/mcp\` initialize ${n(st?.mcpFirstInitializeMs)} ms.${mem ? ` \`GET /leads.json\` on ${n(mem.leads)} leads: RSS growth ${mem.peakGrowthMB} MB (peak ${mem.peakRssMB} MB).` : ''}`,
    '',
    ...targets(r.targets as Target[]),
  ]
}

function scaleOut(r: Json | undefined): string[] {
  if (!r) return ['## `npm run bench -- --redis`', '', 'No committed results yet.']
  const s = r.settings as { rounds: number; durationS: number; pgFlushDelayUs?: number }
  const two = r.twoInstances as { throughput: { aloneRps: number; bothRps: number; bothP99Ms: number } } | undefined
  const latency = r.commitLatency as { medianUs: number } | undefined
  return [
    `## Scaled out: \`npm run bench -- --redis${s.pgFlushDelayUs ? ` --pg-flush-delay-us=${s.pgFlushDelayUs}` : ''}\``,
    '',
    `Made ${when(r.when)} on ${machine(r)}: ${s.rounds} rounds × ${s.durationS} s; embedded = SQLite and counters in memory, redis = SQLite + \`REDIS_URL\`, pg+redis = \`DATABASE_URL\` + \`REDIS_URL\`; naive-pg = one INSERT per transaction, pool of 10 (serial: one connection).${latency ? ` A one-row commit in series took ${n(latency.medianUs)} µs (median).` : ''}`,
    '',
    ...servers(r.ops as Record<string, OpResult>, {}),
    '',
    ...(two
      ? [
          `Two instances (PostgreSQL + Redis): \`getProjects\` ${n(two.throughput.aloneRps)} req/s on one alone, ${n(two.throughput.bothRps)} req/s on both at once (p99 ${n(two.throughput.bothP99Ms, 2)} ms).`,
          '',
        ]
      : []),
    ...targets(r.targets as Target[]),
  ]
}

function backup(r: Json | undefined): string[] {
  if (!r) return ['## `npm run bench:backup`', '', 'No committed results yet.']
  const summary = r.summary as {
    config: string
    leadsPerSecond: number
    p50Ms: number
    p99Ms: number
    maxMs: number
    backupSecondsMedian: number | null
  }[]
  const label: Record<string, string> = {
    none: 'no backup',
    vacuum: '`VACUUM INTO`, own process',
    'backup-api': 'backup API (one step), own process',
    scheduled: "scheduled, the server's worker thread",
  }
  return [
    '## Backups during a lead flood: `npm run bench:backup`',
    '',
    `Made ${when(r.date)}: submitLead at ${r.connections} connections on a log of ${n(r.leads as number)} leads (${r.databaseMBAtStart} MB), backups back to back for the whole window; ${r.rounds} rounds × ${r.durationS} s, medians.`,
    '',
    '| during the window | leads/s | p50 | p99 | backup took (median) |',
    '|---|---|---|---|---|',
    ...summary.map(
      (s) =>
        `| ${label[s.config] ?? s.config} | ${n(s.leadsPerSecond)} | ${s.p50Ms} ms | ${s.p99Ms} ms | ${s.backupSecondsMedian === null ? '–' : `${s.backupSecondsMedian} s`} |`,
    ),
  ]
}

function ablation(r: Json | undefined): string[] {
  const head = '## Each internal against its stock part: `npm run bench -- --ablation`'
  if (!r) return [head, '', 'No committed results yet: the table comes with the first full run on a quiet machine.']
  const s = r.settings as { rounds: number; durationS: number }
  const table = r.table as { internal: string; figure: string; unit: string; withInternal: number; stock: number; gainPct: number }[]
  const decisions = r.decisions as { internal: string; verdict: string }[]
  return [
    head,
    '',
    `Made ${when(r.when)} on ${machine(r)}: ${s.rounds} rounds × ${s.durationS} s; gain is what the internal buys (the median of the per-round ratios; positive: better with it).`,
    '',
    '| internal | figure | with internal | stock | gain |',
    '|---|---|---|---|---|',
    ...table.map((t) => `| ${t.internal} | ${t.figure} | ${t.withInternal} ${t.unit} | ${t.stock} ${t.unit} | ${fmt(t.gainPct, 1)} % |`),
    '',
    '| internal | by the rule (bench/README.md) |',
    '|---|---|',
    ...decisions.map((d) => `| ${d.internal} | ${d.verdict} |`),
  ]
}

/** The figures section, from the results in `dir`. */
export function renderFigures(dir = resultsDir): string {
  const sections = [
    defaultRun(readResults('default', dir)),
    scaleOut(readResults('scale-out', dir)),
    backup(readResults('backup', dir)),
    ablation(readResults('ablation', dir)),
  ]
  return [START, '', ...sections.flatMap((s) => [...s, '']), END].join('\n')
}

/** `markdown` with the part between `start` and `end` replaced by `body`. */
function between(markdown: string, start: string, end: string, body: string, what: string): string {
  const from = markdown.indexOf(start)
  const to = markdown.indexOf(end)
  if (from < 0 || to < from) throw new Error(`${what}: the markers of the rendered part are missing (${start} … ${end})`)
  return `${markdown.slice(0, from)}${start}\n\n${body}\n${end}${markdown.slice(to + end.length)}`
}

/** docs/performance.md with its figures section rendered from the results in `dir`. */
export function withFigures(markdown: string, dir = resultsDir): string {
  const sections = [
    defaultRun(readResults('default', dir)),
    scaleOut(readResults('scale-out', dir)),
    backup(readResults('backup', dir)),
    ablation(readResults('ablation', dir)),
  ]
  return between(markdown, START, END, sections.flatMap((s) => [...s, '']).join('\n'), 'docs/performance.md')
}

/** bench/README.md with its ablation table rendered from the results in `dir`. */
export function withAblation(markdown: string, dir = resultsDir): string {
  const [, , ...body] = ablation(readResults('ablation', dir))
  return between(markdown, ABLATION_START, ABLATION_END, [...body, ''].join('\n'), 'bench/README.md')
}

/** The pages the results are rendered into, and how. */
export const RENDERED = [
  { page: ['docs', 'performance.md'], render: withFigures },
  { page: ['bench', 'README.md'], render: withAblation },
] as const
