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
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { precompiledOpenApiValidator, VALIDATOR } from './precompiled-openapi-validator.mjs'

const root = dirname(dirname(fileURLToPath(import.meta.url)))

const EXTERNAL = ['better-sqlite3', VALIDATOR, '@fastify/swagger', '@fastify/swagger-ui', 'pg', 'ioredis', 'ipaddr.js']

await build({
  entryPoints: {
    'server.bundle': join(root, 'dist', 'server.js'),
    'no-fsync-server.bundle': join(root, 'dist', 'bench', 'no-fsync-server.js'),
    // The SQLite writer's worker thread, next to the bundles that start it (sqlite-thread-dialect.ts).
    'sqlite-thread': join(root, 'dist', 'plugins', 'store', 'sqlite-thread.js'),
  },
  outdir: join(root, 'dist'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: 'linked',
  external: EXTERNAL,
  // CommonJS packages inside an ES module bundle still call require() for Node's own modules.
  banner: { js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);" },
  plugins: [precompiledOpenApiValidator(root)],
  logLevel: 'warning',
})
