// API reference: the spec as JSON at /openapi.json and an interactive reference at /docs
// (Swagger UI, served from the package: no CDN).
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import fp from 'fastify-plugin'
import type { OpenApiDocument } from './spec.js'

export default fp<{ spec: OpenApiDocument }>(
  async (app, { spec }) => {
    const json = JSON.stringify(spec)
    app.get('/openapi.json', async (_request, reply) =>
      reply.type('application/json; charset=utf-8').header('cache-control', 'public, max-age=300').send(json),
    )
    await app.register(swagger, { mode: 'static', specification: { document: structuredClone(spec) as never } })
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { deepLinking: true, tryItOutEnabled: true },
      theme: { title: `${spec.info.title} ${spec.info.version} reference` },
    })
  },
  { name: 'docs', fastify: '5.x', dependencies: ['rate-limit'] },
)
