// CORS, by kind of path:
//  - open: the OAuth endpoints a browser-based client uses on its own (the MCP Inspector, at
//    another origin): the `/.well-known/` metadata documents and the JWKS, the token endpoint,
//    registration and revocation. Any origin, without credentials (`*`): they are bearer and PKCE
//    endpoints that read no cookie, so a page at another origin learns nothing it could not learn
//    from its own server. app.ts names them.
//  - closed: the staff sign-in pages (`/oauth/…` but the open ones: sign-in, consent, enrolment,
//    the passkey script), which carry the person's session cookie: never readable from another
//    origin, whatever CORS_ORIGINS lists.
//  - everything else: the origins the operator lists (CORS_ORIGINS), e.g. the studio's website
//    posting its contact form to submitLead, or a browser-based MCP client on /mcp (the only other
//    origins /mcp accepts, features/mcp/origin.ts); no CORS when none is listed.
// A preflight of a path without CORS is an OPTIONS request like any other (405, or 404).
import cors, { type FastifyCorsOptions } from '@fastify/cors'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'

export interface CorsPaths {
  /** Paths open to any origin: exact paths, or prefixes when they end with `/`. */
  open: readonly string[]
  /** Path prefixes never given CORS (but for the open paths under them). */
  closed: readonly string[]
}

const ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'X-Request-Id',
  'Mcp-Protocol-Version',
  'Mcp-Method',
  'Mcp-Name',
]
const EXPOSED_HEADERS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'Retry-After',
  'X-Request-Id',
  'X-API-Version',
  'ETag',
  'Link',
  'WWW-Authenticate',
]

export default fp<{ config: Config; paths: CorsPaths }>(
  async (app, { config, paths }) => {
    const common = { methods: ['GET', 'HEAD', 'POST'], exposedHeaders: EXPOSED_HEADERS, maxAge: 600 }
    const open: FastifyCorsOptions = {
      ...common,
      origin: '*',
      credentials: false,
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
    }
    const listed: FastifyCorsOptions =
      config.corsOrigins.length === 0 ? { origin: false } : { ...common, origin: config.corsOrigins, allowedHeaders: ALLOWED_HEADERS }
    const none: FastifyCorsOptions = { origin: false }
    const matches = (path: string, p: string) => (p.endsWith('/') ? path.startsWith(p) : path === p)
    const optionsFor = (url: string): FastifyCorsOptions => {
      const path = url.split('?')[0] as string
      if (paths.open.some((p) => matches(path, p))) return open
      if (paths.closed.some((p) => path.startsWith(p))) return none
      return listed
    }
    await app.register(cors, {
      hook: 'onRequest',
      delegator: (request, done) => done(null, optionsFor(request.url)),
    })
  },
  { name: 'cors', fastify: '5.x', dependencies: ['rate-limit'] },
)
