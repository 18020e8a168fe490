// API reference: the spec as served at /openapi.json, the changelog at /changelog, and an
// interactive reference at /docs:
// Swagger UI (served from the package, no CDN), titled and styled for the studio, with the
// getting-started guide of the spec's info.description, real examples, and the client-credentials
// flow working from the page's Authorize dialog, which sits at the top of the page and keeps
// nothing in the browser's storage.
//
// The page reads the document at /docs/json (Swagger UI's loader asks for ./json): the same
// document, byte for byte, as /openapi.json. Swagger UI's large files are served compressed from
// dist/docs-static/ (scripts/docs-assets.mjs, built with the server), by the client's
// Accept-Encoding; nothing is compressed per request.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { type Config, projectRoot } from '../../config.js'
import { escapeHtml } from '../../lib/html.js'

// Read from the source folder (the compiled server runs from dist/, where tsc copies no CSS).
const theme = readFileSync(join(projectRoot, 'plugins', 'docs', 'theme.css'), 'utf8')

/** The API's changelog (CHANGELOG.md), served at /changelog: where `Link: rel="deprecation"` points. */
const changelog = readFileSync(join(projectRoot, 'CHANGELOG.md'), 'utf8')

/** Swagger UI's large files with their .br and .gz copies (scripts/docs-assets.mjs). */
export const docsStaticDir = join(projectRoot, 'dist', 'docs-static')

/** The studio's name as the top bar's logo (SVG text: no image to ship). */
function logo(studio: string): Buffer {
  const e = escapeHtml
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="360" height="34" viewBox="0 0 360 34"><text x="0" y="24" fill="#f3ede4" font-family="system-ui, sans-serif" font-size="20" letter-spacing="2">${e(studio.toUpperCase())}</text><text x="${16 + studio.length * 15}" y="24" fill="#c9b9a6" font-family="system-ui, sans-serif" font-size="15">API reference</text></svg>`,
  )
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const served = app.spec.served(config)
    const json = JSON.stringify(served)
    app.get('/openapi.json', async (_request, reply) =>
      reply.type('application/json; charset=utf-8').header('cache-control', 'public, max-age=300').send(json),
    )
    app.get('/changelog', async (_request, reply) =>
      reply.type('text/markdown; charset=utf-8').header('cache-control', 'public, max-age=300').send(changelog),
    )
    const studio = app.playbook.studio.name

    // Registered before Swagger UI: these exact routes win over its /docs/static/* wildcard.
    if (existsSync(docsStaticDir)) {
      await app.register(fastifyStatic, {
        root: docsStaticDir,
        prefix: '/docs/static/',
        wildcard: false,
        preCompressed: true,
        globIgnore: ['**/*.br', '**/*.gz'],
        decorateReply: false,
        index: false,
      })
    } else {
      app.log.warn(
        { dir: docsStaticDir },
        'the compressed Swagger UI files are missing (npm run build:docs): /docs serves them uncompressed',
      )
    }

    await app.register(swagger, { mode: 'static', specification: { document: served as never } })
    await app.register(swaggerUi, {
      // /docs/json: exactly the document /openapi.json serves.
      transformSpecification: () => served,
      transformSpecificationClone: false,
      routePrefix: '/docs',
      logo: { type: 'image/svg+xml', content: logo(studio), href: '/docs', target: '_self' },
      uiConfig: {
        deepLinking: true,
        docExpansion: 'list',
        // The schemas are shown where they are used, with their examples: no separate list.
        defaultModelsExpandDepth: -1,
        defaultModelExpandDepth: 3,
        defaultModelRendering: 'example',
        tryItOutEnabled: true,
        // Nothing in localStorage: persisting would keep the client secret there indefinitely.
        // A reload asks for the credentials again; the token lives only in the page.
        persistAuthorization: false,
        displayRequestDuration: true,
      },
      theme: { title: `${studio} · ${served.info.title} ${served.info.version}`, css: [{ filename: 'studio.css', content: theme }] },
    })
  },
  { name: 'docs', fastify: '5.x', dependencies: ['spec', 'rate-limit', 'playbook'] },
)
