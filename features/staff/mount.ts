// oidc-provider (a Koa application) mounted in the Fastify app: its routes are Fastify routes
// that hand the raw request and response to the provider, after the plugins' onRequest hooks
// (security headers, CORS, request id, rate limits) ran. The token endpoint is /api/token, one for
// machines and people: client-credentials requests stay with its handler (handlers/issueToken.ts,
// unchanged); authorization_code and refresh_token go to the provider.
//
// The provider reads a request's body itself, from the stream, as its docs' mounting examples
// leave it (hapi's: `payload: { parse: false }`). Here Fastify has read it (the body limit, the
// content-type checks, and /api/token must see `grant_type` to route it), and a spent stream
// makes the provider fall back to `req.body` with a warning on the console ("already parsed
// request body detected"). So the provider is handed a replay instead: a request with the same
// method, URL, headers and socket whose stream holds the body Fastify parsed, written back in its
// content type.
import { IncomingMessage } from 'node:http'
import { stringify } from 'node:querystring'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type Provider from 'oidc-provider'
import { ROUTES } from './provider.js'

/** A request whose stream is given up front: reading it never touches the socket. */
class Replayed extends IncomingMessage {
  override _read(): void {}
}

/** The request as the provider should read it: the raw one, or, when Fastify read its body, a replay of it. */
function forProvider(request: FastifyRequest): IncomingMessage {
  const { raw, body } = request
  if (body === undefined || body === null) return raw
  const type = String(raw.headers['content-type'] ?? '')
  const bytes =
    typeof body === 'string' || Buffer.isBuffer(body)
      ? Buffer.from(body)
      : Buffer.from(/\bjson\b/i.test(type) ? JSON.stringify(body) : stringify(body as Record<string, string | string[]>))
  const replay = new Replayed(raw.socket)
  replay.method = raw.method as string
  replay.url = raw.url as string
  replay.httpVersion = raw.httpVersion
  replay.httpVersionMajor = raw.httpVersionMajor
  replay.httpVersionMinor = raw.httpVersionMinor
  const { 'transfer-encoding': _chunked, ...headers } = raw.headers
  replay.headers = { ...headers, 'content-length': String(bytes.length) }
  // Whole from the start: ending it is no abort (which would close the socket).
  replay.complete = true
  replay.push(bytes)
  replay.push(null)
  return replay
}

/** The grants /api/token hands to the provider. */
export const PERSON_GRANTS: ReadonlySet<string> = new Set(['authorization_code', 'refresh_token'])

export function mountProvider(app: FastifyInstance, provider: Provider): void {
  const callback = provider.callback()
  const forward = (request: FastifyRequest, reply: FastifyReply): void => {
    reply.hijack()
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value as string)
    }
    callback(forProvider(request), reply.raw)
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
