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
//
// How: @fastify/cors with static options (the listed origins) and its route-level `config.cors`,
// set once per route as routes are added: the open paths' options, or `false` for the closed ones.
// Preflights are answered on OPTIONS routes of the open and closed paths beside the plugin's own
// `OPTIONS *`, so they get their path's options too. What no route serves (a 404, a 405) has the
// listed origins' CORS. Static rather than a delegator choosing per request: @fastify/cors
// normalizes a delegator's options on every request (about a seventh of getProjects' server CPU
// per response, the same bundle but for this, side by side under wrk).
import cors, { type FastifyCorsOptions } from '@fastify/cors'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'

// What @fastify/cors reads and sets but does not declare in its types (its README, "Route-Level
// CORS Overrides"; the request flag its own OPTIONS handler reads).
declare module 'fastify' {
  interface FastifyContextConfig {
    cors?: FastifyCorsOptions | false
  }
  interface FastifyRequest {
    corsPreflightEnabled: boolean
  }
}

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
    const isOpen = (path: string) => paths.open.some((p) => (p.endsWith('/') ? path.startsWith(p) : path === p))
    const isClosed = (path: string) => paths.closed.some((p) => path.startsWith(p))
    app.addHook('onRoute', (route) => {
      if (isOpen(route.url)) route.config = { ...route.config, cors: open }
      else if (isClosed(route.url)) route.config = { ...route.config, cors: false }
    })
    await app.register(cors, { hook: 'onRequest', ...listed })
    // The plugin's own preflight handler, on the paths whose options are not the listed ones: a
    // preflight the options refuse is an OPTIONS request like any other.
    const preflight = (request: FastifyRequest, reply: FastifyReply) => {
      if (!request.corsPreflightEnabled) return reply.callNotFound()
      return reply.send()
    }
    for (const p of [...paths.open, ...paths.closed]) app.options(p.endsWith('/') ? `${p}*` : p, preflight)
  },
  { name: 'cors', fastify: '5.x', dependencies: ['rate-limit'] },
)
