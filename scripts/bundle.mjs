// Bundles the compiled server (dist/server.js, and the bench's fsync-off entry) into one file each
// with esbuild: dist/server.bundle.js is what `npm start` runs. Node 20 loads an ES module graph
// file by file (about a thousand files here: Kysely alone is 262), which was a large part of the
// start-up time; one file cuts that. Plain JavaScript: it runs right after tsc.
//
// Left outside the bundle, loaded from node_modules as usual: native code (better-sqlite3), packages
// that read their own files next to their code (the OpenAPI schema validator, Swagger UI's assets, @fastify/swagger's
// package.json), and what only a scaled-out deployment loads (pg, ioredis).
//
// The OpenAPI document check is precompiled into the bundle: see precompiled-openapi-validator.mjs.
import { readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { precompiledOpenApiValidator, VALIDATOR } from './precompiled-openapi-validator.mjs'

const root = dirname(dirname(fileURLToPath(import.meta.url)))

const EXTERNAL = ['better-sqlite3', VALIDATOR, '@fastify/swagger', '@fastify/swagger-ui', 'pg', 'ioredis', 'ipaddr.js']

// Each entry on its own: its own code stays in its file (server.ts checks that it is the file
// Node was started with). What is imported dynamically (the MCP SDK and the MCP server, loaded on
// first use) goes into chunks of its own, dist/chunk-<hash>.js, read only when first needed, so an
// API that no agent talks to never parses them. The chunks sit next to the bundles: code that
// finds files from its own location (config.ts's projectRoot, the SQLite writer thread's file)
// finds the same ones wherever esbuild puts it.
const dist = join(root, 'dist')
for (const file of readdirSync(dist)) if (/^chunk-[A-Z0-9]+\.js(\.map)?$/.test(file)) rmSync(join(dist, file))
const entries = [
  ['server.bundle', join(root, 'dist', 'server.js'), [precompiledOpenApiValidator(root)]],
  ['no-fsync-server.bundle', join(root, 'dist', 'bench', 'no-fsync-server.js'), [precompiledOpenApiValidator(root)]],
  // The SQLite writer's worker thread, next to the bundles that start it (sqlite-thread-dialect.ts).
  ['sqlite-thread', join(root, 'dist', 'plugins', 'store', 'sqlite-thread.js'), []],
]
for (const [name, entry, plugins] of entries) {
  await build({
    entryPoints: { [name]: entry },
    outdir: join(root, 'dist'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    splitting: true,
    chunkNames: 'chunk-[hash]',
    target: 'node20',
    sourcemap: 'linked',
    external: EXTERNAL,
    // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
    banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
    plugins,
    logLevel: 'warning',
  })
}
