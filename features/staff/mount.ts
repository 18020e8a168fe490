// oidc-provider (a Koa application) mounted in the Fastify app: its routes are Fastify routes
// that hand the raw request and response to the provider, after the plugins' onRequest hooks
// (security headers, request id, rate limits) ran. The body Fastify already read is handed over
// parsed (oidc-provider reads `req.body` when the stream is spent). The token endpoint is
// /api/token, one for machines and people: client-credentials requests stay with its handler
// (handlers/issueToken.ts, unchanged); authorization_code and refresh_token go to the provider.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type Provider from 'oidc-provider'
import { ROUTES } from './provider.js'

/** The grants /api/token hands to the provider. */
export const PERSON_GRANTS: ReadonlySet<string> = new Set(['authorization_code', 'refresh_token'])

export function mountProvider(app: FastifyInstance, provider: Provider): void {
  const callback = provider.callback()
  const forward = (request: FastifyRequest, reply: FastifyReply): void => {
    reply.hijack()
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value as string)
    }
    if (request.body !== undefined) (request.raw as { body?: unknown }).body = request.body
    callback(request.raw, reply.raw)
  }
  const config = { allowAnonymous: true }
  app.route({ method: ['GET', 'POST'], url: ROUTES.authorization, config, handler: forward })
  app.get(`${ROUTES.authorization}/:uid`, { config }, forward)
  app.post(ROUTES.registration, { config }, forward)
  app.post(ROUTES.revocation, { config }, forward)

  // /api/token: a person's grants go to the provider, before the spec's validation (which
  // describes the machine grant's body) and its handler.
  app.addHook('preValidation', (request, reply, done) => {
    if (request.routeOptions.url === ROUTES.token && request.method === 'POST') {
      const grant = (request.body as { grant_type?: unknown } | undefined)?.grant_type
      if (typeof grant === 'string' && PERSON_GRANTS.has(grant)) {
        forward(request, reply)
        return
      }
    }
    done()
  })
}
