// Where a run's results go, and how they are written.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { log } from './log.js'
import { RENDERED } from './page.js'
import { resultsDir, root } from './paths.js'
import type { Options } from './types.js'

/** The options that make a run partial or experimental: its results never replace the mode's file. */
const EXPERIMENTAL = ['only', 'leads', 'server', 'cpu-prof', 'child-env', 'api-node-args', 'pg-flush-delay-us']

/**
 * --out, else the mode's file, bench/results/<mode>.json, which docs/performance.md is rendered
 * from (the latest full run; git keeps the earlier ones); a partial or experimental run (--only,
 * --server, --cpu-prof, ...) goes to bench/results/experiments/<mode>-<time>.json (git-ignored).
 */
export function resultsFile(options: Options, when: string): string {
  const out = options.args.get('out')
  if (out !== undefined) return resolve(out)
  // Some internals of the ablation (--ablation=name,...) are a partial run too.
  const experimental = EXPERIMENTAL.some((a) => options.args.has(a)) || (options.args.get('ablation') ?? 'true') !== 'true'
  return experimental
    ? join(resultsDir, 'experiments', `${options.mode}-${when.replace(/[:.]/g, '-')}.json`)
    : join(resultsDir, `${options.mode}.json`)
}

/** Writes `results` of the run made `when` to its file; three decimals are plenty and keep it readable. */
export function writeResults(options: Options, results: object, when: string): string {
  const file = resultsFile(options, when)
  // CPU comes in 10 ms ticks, latency in µs.
  const round = (_key: string, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v)
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, `${JSON.stringify(results, round, 2)}\n`)
  log(`wrote ${relative(root, file)}`)
  // A mode's reference results: docs/performance.md (and bench/README.md, the ablation's) show them.
  if (file === join(resultsDir, `${options.mode}.json`)) {
    for (const { page, render } of RENDERED) {
      const path = join(root, ...page)
      writeFileSync(path, render(readFileSync(path, 'utf8')))
    }
    log('rendered docs/performance.md and bench/README.md from bench/results/')
  }
  return file
}
