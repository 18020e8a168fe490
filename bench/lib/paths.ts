// Where the bench finds the project, its own files and its results.
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
/** The project root: this file is bench/lib/ when run with tsx, dist/bench/lib/ when compiled. */
export const root = resolve(here, '..', '..').replace(/[\\/]dist$/, '')
export const benchDir = join(root, 'bench')
/** wrk's Lua scripts. */
export const wrkDir = join(benchDir, 'wrk')
/** The baselines' sources (run through tsx). */
export const baselinesDir = join(benchDir, 'baselines')
/** The latest results, one file per mode. */
export const resultsDir = join(benchDir, 'results')
/** Node's flags that load a baseline's TypeScript. */
export const tsxImport = ['--import', 'tsx']
