// `npm start`: checks the configuration first, builds only what is stale, then runs the server in
// this process. Plain JavaScript, because it runs before anything is compiled.
//
// A part is stale when one of its sources is newer than the stamp its last successful build left
// in dist/.build/; a fresh clone builds everything once, and a second start builds nothing.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
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

const PARTS = [
  {
    name: 'server (TypeScript, then one bundle)',
    stamp: 'typescript',
    sources: [
      'app.ts',
      'server.ts',
      'config.ts',
      'plugins',
      'handlers',
      'scripts',
      'generated',
      'bench',
      'tsconfig.json',
      'package.json',
      'package-lock.json',
    ],
    command: ['npm', 'run', '-s', 'build:server'],
  },
  { name: 'spec (JSON)', stamp: 'spec', sources: ['spec'], command: ['npx', 'tsx', 'scripts/build-spec.ts'] },
  {
    name: 'agent apps (ui/)',
    stamp: 'ui',
    sources: ['ui', 'plugins/playbook/view-types.ts', 'plugins/pricing/estimate.ts'],
    command: ['npx', 'tsx', 'ui/build.ts'],
  },
]

const stampOf = (part) => join(stamps, part.stamp)
const isStale = (part) => !existsSync(stampOf(part)) || newest(part.sources) > statSync(stampOf(part)).mtimeMs

/** Stops with the configuration's own message (exit 78, EX_CONFIG), before any build. */
async function checkConfig(compiled) {
  const { loadConfig, ConfigError } = compiled
    ? await import(pathToFileURL(join(root, 'dist', 'config.js')).href)
    : await (await import('tsx/esm/api')).tsImport('../config.ts', import.meta.url)
  try {
    loadConfig()
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    process.stderr.write(`studio-api: ${err.message}\n`)
    process.exit(78)
  }
}

const stale = PARTS.filter(isStale)
await checkConfig(!stale.includes(PARTS[0]))

mkdirSync(stamps, { recursive: true })
for (const part of stale) {
  const started = Date.now()
  process.stderr.write(`studio-api: building ${part.name}…\n`)
  const { status } = spawnSync(part.command[0], part.command.slice(1), { cwd: root, stdio: 'inherit' })
  if (status !== 0) {
    process.stderr.write(`studio-api: building ${part.name} failed (exit ${status}); see the output above\n`)
    process.exit(1)
  }
  writeFileSync(stampOf(part), new Date().toISOString())
  process.stderr.write(`studio-api: built ${part.name} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`)
}

// The bundle (scripts/bundle.mjs): one file to load instead of the whole module graph.
const { start } = await import(pathToFileURL(join(root, 'dist', 'server.bundle.js')).href)
await start()
