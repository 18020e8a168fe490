// The ablation (`npm run bench -- --ablation`, or `--ablation=name,name` for some internals):
// each internal that replaced a stock part (internals.ts) against that stock part, in one run.
//   1. the sources as they are, written into temporary copies: a control copy, and one per
//      internal with its patch applied (bench/ablation/<name>.patch); every patch is applied
//      before anything is measured, and one that no longer applies ends the run, naming it;
//   2. each copy bundled as `npm start` bundles it (copies.ts);
//   3. each figure measured on the control and on the stock builds that can move it, side by
//      side in the same rounds (runs.ts): getProjects, issueToken and submitLead on SQLite,
//      getProjects during a lead flood on a slower fsync, submitLead on PostgreSQL, start-up and idle RSS, `npm start`'s first and second start;
//   4. the table (internal, figure, with internal, stock, gain %) and the decision rule
//      (report.ts), printed and written to bench/results/ablation.json.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import * as os from 'node:os'
import { join, relative } from 'node:path'
import { build } from '../../lib/build.js'
import { log } from '../../lib/log.js'
import { root } from '../../lib/paths.js'
import { writeResults } from '../../lib/results.js'
import type { OpResult, Options } from '../../lib/types.js'
import { wrkVersion } from '../../lib/wrk.js'
import { bundleCopy, type Copy, makeCopy, patchFile, sourceCommit } from './copies.js'
import { type Figure, INTERNALS, type Internal } from './internals.js'
import { decisions, KEEP_AT_PCT, printTable, rows } from './report.js'
import { CONTROL, floodFigure, npmStartFigure, postgresFigure, type Samples, sqliteFigures, startupFigure } from './runs.js'

/** The internals --ablation names (all of them for a bare --ablation). */
function selected(options: Options): Internal[] {
  const asked = options.args.get('ablation') ?? 'true'
  if (asked === 'true') return [...INTERNALS]
  const names = asked.split(',').map((s) => s.trim())
  const unknown = names.filter((n) => !INTERNALS.some((i) => i.name === n))
  if (unknown.length)
    throw new Error(`--ablation: no internal ${unknown.join(', ')} (internals: ${INTERNALS.map((i) => i.name).join(', ')})`)
  return INTERNALS.filter((i) => names.includes(i.name))
}

export async function ablationRun(options: Options): Promise<void> {
  const internals = selected(options)
  const measured = (i: Internal) => i.figures.some((f) => options.only.has(f))
  const loadBefore = os.loadavg()
  log(
    `ablation: ${internals.map((i) => i.name).join(', ')}; wrk -t1 -c${options.connections}, ${options.rounds} rounds × ${options.duration} s after a ${options.warmup} s warm-up`,
  )
  // The spec, docs assets and views the copies' servers read come from this tree's build.
  build(options)
  const commit = sourceCommit()
  const tmp = mkdtempSync(join(os.tmpdir(), 'studio-bench-ablation-'))
  const removeTmp = () => {
    if (!options.keep) rmSync(tmp, { recursive: true, force: true, maxRetries: 5 })
  }
  process.on('exit', removeTmp)
  const samples: Samples = {}
  const ops: Record<string, OpResult> = {}
  try {
    // 1. Every patch applied first: one that no longer applies stops the run before any measurement.
    const control = makeCopy(CONTROL, commit, join(tmp, CONTROL), undefined)
    const copies = new Map<string, Copy>()
    for (const internal of internals) {
      copies.set(internal.name, makeCopy(internal.name, commit, join(tmp, internal.name), patchFile(internal.name)))
      log(`ablation: ${relative(root, patchFile(internal.name))} applies`)
    }
    // 2. Bundles, for the builds whose figures run a server from one.
    const serves = internals.filter((i) => i.figures.some((f) => f !== 'npmStart' && options.only.has(f)))
    for (const copy of serves.length ? [control, ...serves.map((i) => copies.get(i.name) as Copy)] : []) {
      log(`ablation: bundling the ${copy.name} copy`)
      bundleCopy(copy)
    }
    // 3. The figures, each on the control and the builds that can move it.
    const who = (figure: Figure) => internals.filter((i) => i.figures.includes(figure)).map((i) => copies.get(i.name) as Copy)
    await sqliteFigures(options, tmp, control, who, samples, ops)
    await floodFigure(options, tmp, control, who('readsDuringFlood'), samples)
    await postgresFigure(options, tmp, control, who('submitLeadPostgres'), samples, ops)
    await startupFigure(options, tmp, control, who('startup'), samples)
    // Last: it removes and rebuilds the copies' dist/.
    await npmStartFigure(options, tmp, control, who('npmStart'), samples)
  } finally {
    process.off('exit', removeTmp)
    removeTmp()
    if (options.keep) log(`kept ${tmp}`)
  }

  // 4. The table and the decisions.
  const measuredInternals = internals.filter(measured)
  const table = rows(measuredInternals, samples)
  const verdicts = decisions(measuredInternals, table)
  printTable(table, verdicts, `Ablation: each internal against its stock part, ${options.rounds} rounds × ${options.duration} s (medians)`)
  const when = new Date().toISOString()
  const cpus = os.cpus()
  writeResults(
    options,
    {
      when,
      machine: {
        cpus: cpus.length,
        cpuModel: cpus[0]?.model,
        node: process.version,
        loadAverageBefore: loadBefore,
        loadAverageAfter: os.loadavg(),
      },
      settings: {
        generator: `${wrkVersion()}: wrk -t1 -c${options.connections} -d${options.duration}s --timeout 10s --latency`,
        rounds: options.rounds,
        durationS: options.duration,
        warmupS: options.warmup,
        connections: options.connections,
        figures: [...options.only],
        source: execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim(),
        sourceCommit: commit,
      },
      notes: [
        'builds: control is the sources as they were (git stash create, else HEAD) written out with git archive and bundled as npm start bundles them; each internal’s build is the same with bench/ablation/<name>.patch applied',
        'ops: the load figures as the default run measures them (wrk, warm-up, rounds interleaved; the control first), by build',
        'gainPct: what the internal buys, the median of the per-round ratios control ÷ stock (req/s) or stock ÷ control (CPU, latency, time, memory), minus 1; positive: the figure is better with the internal',
        `decision: keep an internal where it buys ${KEEP_AT_PCT} % or more on a figure of the performance table (or a correctness need), with a comment in the code pointing at the figure; otherwise the stock part comes back`,
      ],
      internals: internals.map((i) => ({ ...i, patch: relative(root, patchFile(i.name)) })),
      table,
      decisions: verdicts,
      samples,
      ops,
    },
    when,
  )
}
