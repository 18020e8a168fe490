// Progress goes to stderr, stamped with the seconds since the bench started; tables to stdout.
import { performance } from 'node:perf_hooks'

const t0 = performance.now()

export function log(msg: string): void {
  process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}\n`)
}
