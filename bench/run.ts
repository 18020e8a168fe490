// `npm run bench`: one entry for every mode of the benchmark. It reads the command line
// (lib/options.ts), checks for the load generator, and runs the mode:
//   (default)    the API against its baselines, operation by operation: modes/default/
//   --redis      scale-out: embedded, Redis, PostgreSQL + Redis side by side, two instances,
//                Redis stopped under load: modes/scale-out/
//   --backup     what a backup costs the leads coming in (`npm run bench:backup`): modes/backup/
//   --ablation   each internal against the stock part it replaced (patches in ablation/): modes/ablation/
// Progress goes to stderr, the tables to stdout; results to bench/results/<mode>.json. Needs wrk
// on PATH (Debian: apt-get install wrk). Options, durations and how to read the figures: README.md.
import { log } from './lib/log.js'
import { parseOptions } from './lib/options.js'
import type { Mode, Options } from './lib/types.js'
import { requireWrk } from './lib/wrk.js'

const options = parseOptions(process.argv.slice(2))
requireWrk()

const modes: Record<Mode, () => Promise<(options: Options) => Promise<void>>> = {
  default: async () => (await import('./modes/default/index.js')).defaultRun,
  'scale-out': async () => (await import('./modes/scale-out/index.js')).scaleOut,
  backup: async () => (await import('./modes/backup/index.js')).backupRun,
  ablation: async () => (await import('./modes/ablation/index.js')).ablationRun,
}

try {
  await (await modes[options.mode]())(options)
} catch (err) {
  log(`failed: ${(err as Error).stack ?? (err as Error).message}`)
  process.exit(1)
}
