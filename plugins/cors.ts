// CORS for browser callers on the origins the operator lists (CORS_ORIGINS), e.g. the studio's
// website posting its contact form to submitLead. Off when no origin is listed.
import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import type { Config } from '../config.js'

export default fp<{ config: Config }>(
  async (app, { config }) => {
    if (config.corsOrigins.length === 0) return
    await app.register(cors, {
      origin: config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
      exposedHeaders: [
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'Retry-After',
        'X-Request-Id',
        'X-API-Version',
        'ETag',
        'Link',
      ],
      maxAge: 600,
    })
  },
  { name: 'cors', fastify: '5.x', dependencies: ['rate-limit'] },
)
