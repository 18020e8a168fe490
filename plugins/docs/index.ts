// API reference: the spec as served at /openapi.json, and an interactive reference at /docs:
// Swagger UI (served from the package, no CDN), titled and styled for the studio, with the
// getting-started guide of the spec's info.description, real examples, and the client-credentials
// flow working from the page's Authorize dialog.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import { type Config, projectRoot } from '../../config.js'
import type { OpenApiDocument } from '../spec/document.js'

// Read from the source folder (the compiled server runs from dist/, where tsc copies no CSS).
const theme = readFileSync(join(projectRoot, 'plugins', 'docs', 'theme.css'), 'utf8')

/**
 * The document the page shows: the served one, without the security schemes no operation lists
 * (the Authorize dialog would offer a field, such as an API key, that every operation refuses).
 */
export function docsDocument(served: OpenApiDocument): OpenApiDocument {
  const doc = structuredClone(served)
  const used = new Set(
    Object.values(doc.paths).flatMap((item) => Object.values(item).flatMap((op) => (op.security ?? []).flatMap((r) => Object.keys(r)))),
  )
  for (const name of Object.keys(doc.components.securitySchemes)) if (!used.has(name)) delete doc.components.securitySchemes[name]
  return doc
}

/** The studio's name as the top bar's logo (SVG text: no image to ship). */
function logo(studio: string): Buffer {
  const e = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;')
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
    const studio = app.playbook.studio.name
    await app.register(swagger, { mode: 'static', specification: { document: docsDocument(served) as never } })
    await app.register(swaggerUi, {
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
        persistAuthorization: true,
        displayRequestDuration: true,
      },
      theme: { title: `${studio} · ${served.info.title} ${served.info.version}`, css: [{ filename: 'studio.css', content: theme }] },
    })
  },
  { name: 'docs', fastify: '5.x', dependencies: ['spec', 'rate-limit', 'playbook'] },
)
