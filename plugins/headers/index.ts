// Security headers, one policy per kind of response, written as helmet options:
//  - the API (JSON answers, errors, discovery, /mcp, /openapi.json): nosniff, X-Frame-Options
//    DENY, Referrer-Policy no-referrer, Cross-Origin-Resource-Policy same-origin; nothing that
//    only an HTML page uses (no CSP: nothing runs in JSON);
//  - /docs: helmet's page defaults (COOP, Origin-Agent-Cluster, …) and a CSP for Swagger UI
//    (its own scripts and styles, the API as connect-src), never framed;
//  - the project pages: helmet's page defaults; their CSP is their own (features/catalogue/
//    pages.ts: it depends on whether the enquiry form, and its script, is on);
//  - /images/*: as the API, but Cross-Origin-Resource-Policy cross-origin, since the MCP views
//    show these images inside the hosts' sandboxed frames, another origin.
// The MCP views' own CSP is the `_meta.ui.csp` of their resources (features/mcp/views.ts): not an
// HTTP header, untouched here. HSTS is sent only when PUBLIC_BASE_URL is https; whatever
// terminates TLS should send it in any case (README "Security").
//
// helmet turns each kind's options into its headers once, at start-up (`headersOf`: its
// middleware run against a recorder); each route is given its kind's when it is added, and one
// callback hook sets them. Not
// @fastify/helmet, which builds helmet's middleware again on every request (helmet(options) per
// call) and has it set each header on Node's response. Kept for its figure (bench/README.md, "The
// ablation": `npm run bench -- --ablation=helmet-once`): getProjects' server CPU per response.
// What Node and Fastify answer before any hook runs gets the API's headers (`api`).
import type { IncomingMessage, ServerResponse } from 'node:http'
import fp from 'fastify-plugin'
import helmet, { type HelmetOptions } from 'helmet'

export type Headers = Readonly<Record<string, string>>

/** Each kind's headers, X-API-Version included, and the kind of a route by its URL. */
export interface HeaderPolicy {
  /** The API's (JSON answers, errors): also what is written before a request could be read (plugins/errors/raw.ts). */
  api: Headers
  /** The headers of a route's kind by its URL: the API's unless its kind has its own. */
  of(url: string): Headers
}

/** The headers helmet sets for `options`: its middleware run once against a recorder. */
export function headersOf(options: Readonly<HelmetOptions>): Headers {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader: (name: string, value: unknown) => {
      headers[name.toLowerCase()] = String(value)
    },
    removeHeader: (name: string) => {
      delete headers[name.toLowerCase()]
    },
  }
  helmet(options)({} as IncomingMessage, recorder as unknown as ServerResponse, () => {})
  return headers
}

/**
 * Each kind's headers, helmet run once per kind here, and the kind of a route by its URL. app.ts
 * calls it once and hands the result to this plugin and to the answers Fastify and Node write
 * before any hook runs (parser refusals, CONNECT, malformed URLs), so that every response carries
 * the same headers.
 */
export function securityHeaders(publicBaseUrl: string, version: string): HeaderPolicy {
  const origin = new URL(publicBaseUrl).origin
  // Only a host served over https may ask browsers to insist on it; not for sibling hosts.
  const hsts = publicBaseUrl.startsWith('https://') ? { maxAge: 31_536_000, includeSubDomains: false } : false
  const common = { xFrameOptions: { action: 'deny' }, referrerPolicy: { policy: 'no-referrer' }, strictTransportSecurity: hsts } as const
  const apiOptions = {
    ...common,
    contentSecurityPolicy: false,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  } as const
  // A kind's options replace the API's key by key: what the API turns off, a page turns back on
  // (true is helmet's default).
  const pageDefaults = {
    crossOriginOpenerPolicy: true,
    originAgentCluster: true,
    xDnsPrefetchControl: true,
    xDownloadOptions: true,
    xPermittedCrossDomainPolicies: true,
    xXssProtection: true,
  }
  const image = { ...apiOptions, crossOriginResourcePolicy: { policy: 'cross-origin' } } as const
  const page = { ...common, ...pageDefaults, contentSecurityPolicy: false } as const
  const docs = {
    ...common,
    ...pageDefaults,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        // Swagger UI sets style attributes from its scripts.
        'style-src': ["'self'", "'unsafe-inline'"],
        'img-src': ["'self'", 'data:'],
        'font-src': ["'self'", 'data:'],
        'connect-src': ["'self'", origin],
        'object-src': ["'none'"],
        'base-uri': ["'self'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
      },
    },
  }
  // Every response says which version of the contract answered it: written into each kind's headers.
  const headersOfKind = (options: Readonly<Record<string, unknown>>): Headers =>
    Object.freeze({ ...headersOf({ ...apiOptions, ...options } as HelmetOptions), 'x-api-version': version })
  const api = headersOfKind({})
  const kinds = { docs: headersOfKind(docs), page: headersOfKind(page), image: headersOfKind(image) }
  const of = (url: string): Headers => {
    if (url === '/docs' || url.startsWith('/docs/')) return kinds.docs
    if (url === '/projects' || url.startsWith('/projects/')) return kinds.page
    // The staff sign-in pages (features/staff): their CSP is their own.
    if (url.startsWith('/oauth/')) return kinds.page
    if (url.startsWith('/images/')) return kinds.image
    return api
  }
  return { api, of }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The security headers of this route's kind of response, X-API-Version included (set when the route is added). */
    securityHeaders?: Headers
  }
}

export default fp<{ policy: HeaderPolicy }>(
  async (app, { policy }) => {
    app.addHook('onRoute', (route) => {
      route.config = { ...route.config, securityHeaders: policy.of(route.url ?? '') }
    })
    // One callback hook for the headers every response carries: its kind's security headers and
    // the version, then the request's id. Routes added by no onRoute (the 404 handler) get the API's.
    app.addHook('onRequest', (request, reply, done) => {
      reply.headers(request.routeOptions.config?.securityHeaders ?? policy.api).header('x-request-id', request.id)
      done()
    })
  },
  { name: 'headers', fastify: '5.x' },
)
