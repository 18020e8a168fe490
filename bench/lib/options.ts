// The command line of `npm run bench` (and `npm run bench:backup`, which is `--backup`), read once:
// the mode, and the options it takes. An option the mode does not take is refused (exit 2), so a
// typo never measures something else than asked.
import { dirname, join, resolve } from 'node:path'
import { root } from './paths.js'
import type { Mode, Options } from './types.js'

/** The parts of the default run, in the order they run. */
export const DEFAULT_PARTS = ['getProjects', 'getLeads', 'issueToken', 'submitLead', 'memory'] as const
/** The parts of the scale-out mode (--redis). */
export const SCALE_OUT_PARTS = ['getProjects', 'issueToken', 'submitLead', 'twoInstances', 'outage'] as const
/** The figures of the ablation (--ablation): see bench/modes/ablation/runs.ts. */
export const ABLATION_PARTS = [
  'getProjects',
  'issueToken',
  'submitLead',
  'readsDuringFlood',
  'submitLeadPostgres',
  'startup',
  'npmStart',
] as const

const COMMON = ['duration', 'rounds', 'connections', 'skip-build', 'keep', 'out']
/** The options of each mode (beside the flag that selects it). */
const TAKES: Record<Mode, string[]> = {
  default: [...COMMON, 'only', 'leads', 'cpu-prof', 'server', 'api-node-args', 'child-env'],
  'scale-out': [...COMMON, 'only', 'cpu-prof', 'server', 'api-node-args', 'child-env', 'database', 'candidates', 'pg-flush-delay-us'],
  backup: [...COMMON, 'leads'],
  ablation: [...COMMON, 'only', 'database'],
}
const PARTS: Record<Mode, readonly string[]> = {
  default: DEFAULT_PARTS,
  'scale-out': SCALE_OUT_PARTS,
  backup: [],
  ablation: ABLATION_PARTS,
}
const MODE_FLAGS: Record<string, Mode> = { redis: 'scale-out', backup: 'backup', ablation: 'ablation' }

function refuse(message: string): never {
  process.stderr.write(`bench: ${message}\n`)
  process.exit(2)
}

export function parseOptions(argv: readonly string[]): Options {
  const args = new Map<string, string>()
  for (const a of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a)
    if (!m?.[1]) refuse(`unknown argument ${a}`)
    args.set(m[1], m[2] ?? 'true')
  }
  const modes = [...args.keys()].filter((k) => MODE_FLAGS[k] !== undefined)
  if (modes.length > 1) refuse(`--${modes.join(' and --')}: one mode at a time`)
  const mode: Mode = modes[0] ? (MODE_FLAGS[modes[0]] as Mode) : 'default'
  for (const name of args.keys()) {
    if (MODE_FLAGS[name] === undefined && !TAKES[mode].includes(name)) {
      refuse(`--${name} is not an option of the ${mode} mode (its options: ${TAKES[mode].map((o) => `--${o}`).join(', ')})`)
    }
  }
  const num = (name: string, dflt: number): number => {
    const v = Number(args.get(name) ?? dflt)
    if (!Number.isInteger(v) || v <= 0) refuse(`--${name} must be a positive whole number`)
    return v
  }
  // wrk takes whole seconds.
  const duration = num('duration', mode === 'backup' ? 8 : 6)
  const parts = PARTS[mode]
  const only = new Set(
    (args.get('only') ?? parts.join(','))
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  for (const p of only) if (!parts.includes(p)) refuse(`--only: unknown part ${p} (parts: ${parts.join(', ')})`)
  // --server=<file>: benchmark another build of the server (an experiment); default the bundle that
  // `npm start` runs, dist/server.bundle.js (scripts/bundle.mjs).
  const serverJs = resolve(args.get('server') ?? join(root, 'dist', 'server.bundle.js'))
  const childEnv = Object.fromEntries(
    (args.get('child-env') ?? '')
      .split(';')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  )
  return {
    mode,
    args,
    duration,
    rounds: num('rounds', 3),
    connections: num('connections', 32),
    warmup: mode === 'backup' ? 2 : Math.min(2, duration),
    leads: num('leads', mode === 'backup' ? 200_000 : 100_000),
    only,
    // --server implies --skip-build: the build it names is measured as it is.
    skipBuild: args.has('skip-build') || args.has('server'),
    keep: args.has('keep'),
    cpuProf: args.has('cpu-prof'),
    serverJs,
    noFsyncJs: serverJs.endsWith('server.bundle.js')
      ? join(dirname(serverJs), 'no-fsync-server.bundle.js')
      : join(dirname(serverJs), 'bench', 'baselines', 'no-fsync-server.js'),
    apiNodeArgs: (args.get('api-node-args') ?? '').split(/\s+/).filter(Boolean),
    childEnv,
  }
}
