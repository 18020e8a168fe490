// Swagger UI's large files (2.1 MB of script and style), compressed once at build time for /docs:
// dist/docs-static/ holds each file with its .br (Brotli) and .gz copies, which the docs plugin
// serves by the client's Accept-Encoding (@fastify/static's preCompressed), so nothing is
// compressed per request. Run by `npm start` when the installed Swagger UI changed, and by
// `npm run build` / `npm run build:docs`. Plain JavaScript, like the other start-time steps.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
/** Where the docs plugin looks (plugins/docs/index.ts). */
export const docsStaticDir = join(root, 'dist', 'docs-static')
/** The files worth compressing; Swagger UI's small ones are served from its package as they are. */
export const DOCS_ASSETS = ['swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-ui.css']

export async function buildDocsAssets() {
  const require = createRequire(join(root, 'package.json'))
  const source = join(dirname(require.resolve('@fastify/swagger-ui/package.json')), 'static')
  mkdirSync(docsStaticDir, { recursive: true })
  await Promise.all(
    DOCS_ASSETS.map(async (name) => {
      const bytes = readFileSync(join(source, name))
      // Brotli 9: within 10 % of the smallest (11) for a twentieth of its time.
      const [br, gz] = await Promise.all([
        promisify(brotliCompress)(bytes, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: 9,
            [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
            [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length,
          },
        }),
        promisify(gzip)(bytes, { level: 9 }),
      ])
      writeFileSync(join(docsStaticDir, name), bytes)
      writeFileSync(join(docsStaticDir, `${name}.br`), br)
      writeFileSync(join(docsStaticDir, `${name}.gz`), gz)
    }),
  )
  return docsStaticDir
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`wrote ${await buildDocsAssets()}\n`)
}
