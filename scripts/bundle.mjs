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
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'
import { precompiledOpenApiValidator, VALIDATOR } from './precompiled-openapi-validator.mjs'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
const dist = join(root, 'dist')

const EXTERNAL = ['better-sqlite3', VALIDATOR, '@fastify/swagger', '@fastify/swagger-ui', 'pg', 'ioredis', 'ipaddr.js']

/** esbuild's settings every bundle here shares: the server's, the CLI's, the threads', the tests'. */
const COMMON = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  splitting: true,
  chunkNames: 'chunk-[hash]',
  target: 'node20',
  sourcemap: 'linked',
  // The maps name the source files, which are here; without a copy of their text inside, Node's
  // --enable-source-maps reads a fifth as much at each start (a test process: 1.38 s of CPU
  // against 1.57 s, test/app/rules.test.ts) and stack traces still point at the TypeScript.
  sourcesContent: false,
  tsconfig: join(root, 'tsconfig.json'),
  // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  logLevel: 'warning',
}

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
        ...COMMON,
        entryPoints: { [name]: join(root, ENTRIES[name].source) },
        outdir: dist,
        external: EXTERNAL,
        plugins: ENTRIES[name].app ? [precompiledOpenApiValidator(root)] : [],
      }),
    ),
  )
  removeUnusedChunks()
}

/** Where the test files' bundles go (`npm test` runs them: test/tiers.mjs). */
export const TESTS_DIR = join(dist, 'tests')

/** A test file's bundle: test/app/leads.test.ts → dist/tests/app-leads.test.js (one flat folder). */
export const testBundle = (file) => join(TESTS_DIR, `${testBundleName(file)}.js`)
const testBundleName = (file) =>
  file
    .replace(/^test[\\/]/, '')
    .replace(/\.ts$/, '')
    .replace(/[\\/]/g, '-')

/**
 * The test files, bundled as the server is (node_modules inside, the precompiled OpenAPI
 * validator), into one flat folder with their shared chunks and the worker threads' files, so
 * that code finding a file next to itself (the SQLite writer thread, config.ts's projectRoot)
 * finds it wherever esbuild put that code. Through tsx every test process loaded about a thousand
 * modules one by one and compiled the OpenAPI schema for every app it built; a bundle halves a
 * test file's CPU time (test/app/token.test.ts: 12 s against 23 s of CPU). tsc still checks the
 * sources' types (`npm run typecheck`); tap's --enable-source-maps maps stack traces back to them.
 * `import.meta.url` in a test file stays the test file's own (a plugin writes it in), so tests
 * find their neighbours as they do from source (testFileUrls). Always every test file at once: shared code goes
 * to chunks, never into one file's bundle.
 */
export async function bundleTests(files) {
  rmSync(TESTS_DIR, { recursive: true, force: true })
  await build({
    entryPoints: {
      ...Object.fromEntries(files.map((file) => [testBundleName(file), join(root, file)])),
      'sqlite-thread': join(root, ENTRIES['sqlite-thread'].source),
      'backup-thread': join(root, ENTRIES['backup-thread'].source),
    },
    ...COMMON,
    outdir: TESTS_DIR,
    // tap (the runner's own instance), the browser driver, the build and lint tools some tests run
    // (they load native code or their own files) and the typed client package stay packages.
    external: [
      ...EXTERNAL,
      ...['tap', '@tapjs/*', 'playwright-core', 'esbuild', 'tsx', 'tsx/*', 'vite', 'typescript', 'openapi-typescript'],
      ...['@redocly/*', '@stoplight/*', '@biomejs/*', 'studio-api-client'],
    ],
    plugins: [precompiledOpenApiValidator(root), testFileUrls()],
  })
}

/**
 * Writes each test file's own URL in place of its `import.meta.url`, and each script's: a script
 * inlined into a test's bundle must not take the test for itself (`if (import.meta.url === argv[1])
 * main()`, spec-diff's say). The app's own code keeps the bundle's URL, to find the threads' files.
 */
function testFileUrls() {
  return {
    name: 'test-file-urls',
    setup(b) {
      const own = ['test', 'scripts', 'bench'].map((dir) => join(root, dir, '/'))
      b.onLoad({ filter: /\.ts$/ }, (args) =>
        own.some((dir) => args.path.startsWith(dir))
          ? {
              contents: readFileSync(args.path, 'utf8').replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)),
              loader: 'ts',
            }
          : undefined,
      )
    },
  }
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
