// bench/fsync-delay.c built into a preloadable library: every fsync of a process it is preloaded
// into (LD_PRELOAD, with FSYNC_DELAY_US) takes that much longer, as on a slower disk than this
// machine's. Needs gcc.
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { benchDir } from './paths.js'

/** Builds the shim into `dir` and returns its path; throws, saying why, when gcc cannot. */
export function buildFsyncShim(dir: string): string {
  const shim = join(dir, 'fsync-delay.so')
  try {
    execFileSync('gcc', ['-shared', '-fPIC', '-O2', '-o', shim, join(benchDir, 'fsync-delay.c'), '-ldl'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
  } catch (err) {
    throw new Error(`could not build bench/fsync-delay.c with gcc (apt-get install gcc): ${(err as Error).message}`)
  }
  return shim
}
