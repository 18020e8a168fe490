// CORS for browser callers on the origins the operator lists (CORS_ORIGINS), e.g. the studio's
// website posting its contact form to submitLead, or a browser-based MCP client on /mcp (the
// only other origins /mcp accepts, features/mcp/origin.ts). Off when no origin is listed.
import cors from '@fastify/cors'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'

export default fp<{ config: Config }>(
  async (app, { config }) => {
    if (config.corsOrigins.length === 0) return
    await app.register(cors, {
      origin: config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST'],
      allowedHeaders: [
        'Authorization',
        'Content-Type',
        'Idempotency-Key',
        'X-Request-Id',
        'Mcp-Protocol-Version',
        'Mcp-Method',
        'Mcp-Name',
      ],
      exposedHeaders: [
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
        'Retry-After',
        'X-Request-Id',
        'X-API-Version',
        'ETag',
        'Link',
        'WWW-Authenticate',
      ],
      maxAge: 600,
    })
  },
  { name: 'cors', fastify: '5.x', dependencies: ['rate-limit'] },
)
