// Bundles the server (and the other entries below) from the TypeScript sources into one file each
// with esbuild: dist/server.bundle.js is what `npm start` runs. esbuild reads TypeScript itself
// and checks no types, so a bundle takes about a second; types are tsc's job (`npm run typecheck`,
// in `npm test`, and `npm run build`). Node 20 loads an ES module graph file by file (about a
// thousand files here: Kysely alone is 262), which was a large part of the start-up time; one
// file cuts that. Plain JavaScript: `npm start` runs it before anything is compiled.
//
//   node scripts/bundle.mjs                  every entry
//   node scripts/bundle.mjs server.bundle    only the named entries
//
// Left outside the bundles, loaded from node_modules as usual: native code (better-sqlite3),
// packages that read their own files next to their code (the OpenAPI schema validator, Swagger
// UI's assets, @fastify/swagger's package.json), and what only a scaled-out deployment loads (pg,
// ioredis).
//
// The OpenAPI document check is precompiled into the bundle: see precompiled-openapi-validator.mjs.
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { precompiledOpenApiValidator, VALIDATOR } from './precompiled-openapi-validator.mjs'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const dist = join(root, 'dist')

const EXTERNAL = ['better-sqlite3', VALIDATOR, '@fastify/swagger', '@fastify/swagger-ui', 'pg', 'ioredis', 'ipaddr.js']

/**
 * Every bundle, by its name in dist/ (`<name>.js`): its TypeScript entry, whether it carries the
 * precompiled OpenAPI validator (what builds the app does), and whether the server needs it to
 * run (`start`: the server itself and the worker threads it starts from files next to it).
 * A new program that should run without tsx (a CLI a timer starts, say) is one more line here;
 * `npm run build` builds every entry, `npm start` the `start` ones (START_ENTRIES).
 */
export const ENTRIES = {
  'server.bundle': { source: 'server.ts', app: true, start: true },
  // The bench's fsync-off server (its default run runs it beside server.bundle.js).
  'no-fsync-server.bundle': { source: 'bench/baselines/no-fsync-server.ts', app: true },
  // The SQLite writer's worker thread, next to the bundles that start it (sqlite-thread-dialect.ts).
  'sqlite-thread': { source: 'plugins/store/sqlite-thread.ts', app: false, start: true },
  // The scheduled backups' worker thread, likewise (features/backup/index.ts).
  'backup-thread': { source: 'features/backup/backup-thread.ts', app: false, start: true },
  // The configuration alone: scripts/start.mjs checks it before it builds anything else.
  'config.bundle': { source: 'config.ts', app: false },
  // The operator's CLI (scripts/studio.ts): what the system tests run as a process, as they run
  // server.bundle, so that a test starts in a fraction of a second instead of compiling through tsx.
  'studio.bundle': { source: 'scripts/studio.ts', app: true },
}

/** What `npm start` builds: the server and the files it starts threads from. */
export const START_ENTRIES = Object.keys(ENTRIES).filter((name) => ENTRIES[name].start)

/**
 * Each entry is built on its own: its own code stays in its file (server.ts checks that it is the
 * file Node was started with). What is imported dynamically (the MCP SDK and the MCP server,
 * loaded on first use) goes into chunks of its own, dist/chunk-<hash>.js, read only when first
 * needed, so an API that no agent talks to never parses them. The chunks sit next to the bundles:
 * code that finds files from its own location (config.ts's projectRoot, the SQLite writer
 * thread's file) finds the same ones wherever esbuild puts it.
 */
export async function bundle(names = Object.keys(ENTRIES)) {
  for (const name of names)
    if (!ENTRIES[name]) throw new Error(`bundle: no entry ${name}; the entries are ${Object.keys(ENTRIES).join(', ')}`)
  await Promise.all(
    names.map((name) =>
      build({
        entryPoints: { [name]: join(root, ENTRIES[name].source) },
        outdir: dist,
        bundle: true,
        platform: 'node',
        format: 'esm',
        splitting: true,
        chunkNames: 'chunk-[hash]',
        target: 'node20',
        sourcemap: 'linked',
        tsconfig: join(root, 'tsconfig.json'),
        external: EXTERNAL,
        // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
        banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
        plugins: ENTRIES[name].app ? [precompiledOpenApiValidator(root)] : [],
        logLevel: 'warning',
      }),
    ),
  )
  removeUnusedChunks()
}

const CHUNK = /chunk-[A-Z0-9]+\.js/g

/**
 * Deletes the chunks that no bundle in dist/ imports any more (left by earlier builds), and only
 * those: entries built at different times share the folder.
 */
function removeUnusedChunks() {
  const files = readdirSync(dist).filter((f) => f.endsWith('.js'))
  const isChunk = (f) => /^chunk-[A-Z0-9]+\.js$/.test(f)
  const used = new Set()
  const visit = (file) => {
    for (const [chunk] of readFileSync(join(dist, file), 'utf8').matchAll(CHUNK)) {
      if (used.has(chunk)) continue
      used.add(chunk)
      if (files.includes(chunk)) visit(chunk)
    }
  }
  for (const file of files) if (!isChunk(file)) visit(file)
  for (const file of files) {
    if (!isChunk(file) || used.has(file)) continue
    rmSync(join(dist, file))
    rmSync(join(dist, `${file}.map`), { force: true })
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await bundle(process.argv.length > 2 ? process.argv.slice(2) : undefined)
}
