// Kept for its figure (bench/README.md, "The ablation": `npm run bench -- --ablation=incremental-start`):
// a second `npm start` (and a first one, with no dist/) against `npm run build` then the bundle.
//
// `npm start`: checks the configuration first, builds only what is stale, the parts side by side
// and from the sources (esbuild reads TypeScript and checks no types: `npm run typecheck` does),
// then runs the server in this process, and ends it when the process that started it ends.
// Plain JavaScript, because it runs before anything is built.
//
// A part is stale when one of its sources is newer than the stamp its last successful build left
// in dist/.build/; a fresh clone builds everything once, and a second start builds nothing.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const stamps = join(root, 'dist', '.build')

/** Newest modification time of the files under these paths (0 when none exist). */
function newest(paths) {
  let latest = 0
  for (const rel of paths) {
    const path = join(root, rel)
    if (!existsSync(path)) continue
    const info = statSync(path)
    if (info.isDirectory()) {
      latest = Math.max(latest, newest(readdirSync(path).map((name) => join(rel, name))))
    } else {
      latest = Math.max(latest, info.mtimeMs)
    }
  }
  return latest
}

/** Build steps running in processes of their own (stopped if the configuration is refused). */
const children = new Set()

/** A child process with this terminal; resolves when it succeeded. */
function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit' })
    children.add(child)
    child.on('exit', () => children.delete(child))
    child.on('error', reject)
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${args.join(' ')} ended with ${signal ?? `exit ${code}`}`)),
    )
  })
}

const PARTS = [
  {
    name: 'server bundle',
    stamp: 'server',
    sources: [
      'app.ts',
      'server.ts',
      'config.ts',
      'plugins',
      'features',
      'lib',
      'handlers',
      'generated',
      'scripts/bundle.mjs',
      'scripts/precompiled-openapi-validator.mjs',
      'tsconfig.json',
      'package.json',
      'package-lock.json',
    ],
    build: async () => {
      const { bundle, START_ENTRIES } = await import('./bundle.mjs')
      await bundle(START_ENTRIES)
    },
  },
  {
    name: 'spec (JSON)',
    stamp: 'spec',
    sources: ['spec/openapi.yaml'],
    build: async () => (await import('./build-spec.mjs')).buildSpec(),
  },
  {
    name: 'docs assets (compressed Swagger UI)',
    stamp: 'docs',
    sources: ['scripts/docs-assets.mjs', 'package-lock.json'],
    build: async () => (await import('./docs-assets.mjs')).buildDocsAssets(),
  },
  {
    name: 'agent apps (ui/)',
    stamp: 'ui',
    sources: ['ui', 'features/playbook/view-types.ts', 'features/pricing/estimate.ts', 'package-lock.json'],
    // Vite in a process of its own, beside the bundle (ui/build.ts is TypeScript: through tsx).
    // The longest step: it starts first, while the configuration is checked.
    early: true,
    build: () => run(process.execPath, ['--import', 'tsx', 'ui/build.ts']),
  },
]

const stampOf = (part) => join(stamps, part.stamp)
const isStale = (part) => !existsSync(stampOf(part)) || newest(part.sources) > statSync(stampOf(part)).mtimeMs

/**
 * Stops with the configuration's own message (exit 78, EX_CONFIG) before the server is built: the
 * configuration is bundled alone first when the server is stale (a fraction of a second). The
 * one step started before it, the agent apps' build, is stopped.
 */
async function checkConfig(serverStale) {
  if (serverStale) await (await import('./bundle.mjs')).bundle(['config.bundle'])
  const { loadConfig, ConfigError } = await import(pathToFileURL(join(root, 'dist', 'config.bundle.js')).href)
  try {
    loadConfig()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    for (const child of children) child.kill('SIGTERM')
    process.stderr.write(`studio-api: ${err.message}\n`)
    process.exit(78)
  }
}

/** Builds a part; its stamp is written only when it succeeded. */
async function buildPart(part) {
  const t0 = Date.now()
  await part.build()
  writeFileSync(stampOf(part), new Date().toISOString())
  process.stderr.write(`studio-api: built ${part.name} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`)
}

const stale = PARTS.filter(isStale)
if (stale.length > 0) {
  mkdirSync(stamps, { recursive: true })
  const started = Date.now()
  process.stderr.write(`studio-api: building ${stale.map((p) => p.name).join(', ')} (side by side)…\n`)
  const early = stale
    .filter((part) => part.early)
    .map((part) => {
      const building = buildPart(part)
      building.catch(() => {}) // its failure is reported below, with the others
      return building
    })
  await checkConfig(stale.includes(PARTS[0]))
  const results = await Promise.allSettled([...early, ...stale.filter((part) => !part.early).map(buildPart)])
  // allSettled keeps the order: the early parts first.
  const order = [...stale.filter((part) => part.early), ...stale.filter((part) => !part.early)]
  const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [[order[i], r.reason]] : []))
  for (const [part, reason] of failed) {
    process.stderr.write(`studio-api: building ${part.name} failed: ${reason?.message ?? reason}; see the output above\n`)
  }
  if (failed.length > 0) process.exit(1)
  process.stderr.write(`studio-api: built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
}

// --- ending with the launcher ------------------------------------------------------------

/** Linux: a process's parent id and name from /proc (undefined elsewhere, or once it is gone). */
function procStat(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // "pid (name) state ppid …": the name may hold spaces and parentheses.
    const close = stat.lastIndexOf(')')
    return { name: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(stat.slice(close + 2).split(' ')[1]) }
  } catch {
    return undefined
  }
}

/**
 * The links to watch, child → parent: this process → its parent, and, under a shell (npm runs
 * `sh -c "exec node scripts/start.mjs"`: the exec makes this process npm's own child, so that npm
 * passes its signals, SIGINT included, straight to the server; another runner may keep a shell), the
 * shell → its parent. A SIGTERM to npm reaches its shell,
 * which ends without passing it on; a SIGKILL reaches neither. Either way a link breaks: the
 * orphan is adopted by another process.
 */
function launcherLinks() {
  const links = [{ child: process.pid, parent: process.ppid }]
  const shell = procStat(process.ppid)
  if (process.env.npm_lifecycle_event && shell && /^(sh|bash|dash|zsh)$/.test(shell.name) && shell.ppid > 1) {
    links.push({ child: process.ppid, parent: shell.ppid })
  }
  return links
}

const parentOf = (pid) => (pid === process.pid ? process.ppid : procStat(pid)?.ppid)

/**
 * Ends the server (gracefully: SIGTERM to itself, see server.ts) once the process that started it
 * is gone, so that a supervisor stopping `npm start` never leaves it holding the port. A
 * supervisor should rather run the server directly (README "Operating it").
 */
function endWithLauncher() {
  const links = launcherLinks()
  if (links[0].parent <= 1) return // started by init itself: nothing above to lose
  const timer = setInterval(() => {
    const broken = links.find((link) => parentOf(link.child) !== link.parent)
    if (!broken) return
    clearInterval(timer)
    process.stderr.write(`studio-api: the process that started it (pid ${broken.parent}) has ended; shutting down\n`)
    process.kill(process.pid, 'SIGTERM')
  }, 1000)
  timer.unref()
}

// The bundle (scripts/bundle.mjs): one file to load instead of the whole module graph.
const { start } = await import(pathToFileURL(join(root, 'dist', 'server.bundle.js')).href)
endWithLauncher()
await start()
