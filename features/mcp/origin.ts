// Streamable HTTP's Origin rule (MCP transport spec, against DNS rebinding and pages driving the
// endpoint from a visitor's browser): a request that carries an Origin is served only when that
// origin is allowed, the server's own (PUBLIC_BASE_URL) or one listed in CORS_ORIGINS, the browser
// origins the operator trusts with the API. Anything else is 403 `origin_not_allowed`. Clients
// that are not browsers send no Origin and are not affected.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { AppError } from '../../plugins/errors/codes.js'

/** The allowed origins, serialized as browsers send them (scheme, host, port when not the default). */
export function allowedOrigins(config: Pick<Config, 'publicBaseUrl' | 'corsOrigins'>): ReadonlySet<string> {
  return new Set([config.publicBaseUrl, ...config.corsOrigins].map((url) => new URL(url).origin))
}

/** Whether a request's Origin header (absent: not a browser) may call /mcp. */
export function originAllowed(origin: string | undefined, allowed: ReadonlySet<string>): boolean {
  if (origin === undefined) return true
  return URL.canParse(origin) && allowed.has(new URL(origin).origin)
}

export function refuseForeignOrigin(config: Config) {
  const allowed = allowedOrigins(config)
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    const origin = request.headers.origin
    if (originAllowed(origin, allowed)) return payload
    throw new AppError(
      'origin_not_allowed',
      `Requests from the origin ${JSON.stringify(String(origin).slice(0, 200))} may not call this MCP endpoint.`,
      'connect from an MCP client without an Origin header, or ask the operator to list your origin in CORS_ORIGINS',
    )
  }
}
