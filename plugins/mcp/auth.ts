// /mcp as an OAuth 2.0 resource server (MCP authorization spec, RFC 9728, RFC 6750).
//
// The auth plugin has already verified the bearer token of every request (onRequest) into
// `request.principal`. Here:
//  - requireToken (preParsing, after the rate limiter): no valid token → 401 with
//    `WWW-Authenticate: Bearer resource_metadata="…"` (+ error="invalid_token" for a bad one);
//  - requireToolScopes (preHandler, on the parsed JSON-RPC body, batches included): a tools/call
//    of a tool whose scope the token lacks → 403 with the scope challenge
//    `Bearer error="insufficient_scope", scope="…", resource_metadata="…"`.
// Both answer with the API's Error body.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { bearerChallenge as challenge } from '../auth/rules.js'
import { AppError } from '../errors/codes.js'

export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource/mcp'

export const mcpResource = (config: Config): string => `${config.publicBaseUrl}/mcp`
export const resourceMetadataUrl = (config: Config): string => `${config.publicBaseUrl}${PROTECTED_RESOURCE_PATH}`

/** RFC 9728 protected-resource metadata of /mcp. */
export function protectedResourceMetadata(config: Config, scopes: readonly string[], resourceName: string) {
  return {
    resource: mcpResource(config),
    authorization_servers: [config.publicBaseUrl],
    scopes_supported: [...scopes],
    bearer_methods_supported: ['header'],
    resource_name: resourceName,
    resource_documentation: `${config.publicBaseUrl}/docs`,
  }
}

export function requireToken(config: Config) {
  const metadata = resourceMetadataUrl(config)
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    if (request.principal?.via === 'OAuth2') return payload
    const presented = request.headers.authorization !== undefined
    const hint =
      presented && request.authFailure
        ? request.authFailure
        : 'send "Authorization: Bearer <access_token>" with a token from POST /api/token'
    throw new AppError('unauthorized', 'The MCP endpoint needs a valid access token.', hint, {
      'www-authenticate': presented
        ? challenge({ error: 'invalid_token', error_description: hint, resource_metadata: metadata })
        : challenge({ resource_metadata: metadata }),
    })
  }
}

interface JsonRpcLike {
  method?: unknown
  params?: { name?: unknown }
}

/** The tools a JSON-RPC message (or batch) calls. */
export function calledTools(body: unknown): string[] {
  const messages: unknown[] = Array.isArray(body) ? body : [body]
  return messages.flatMap((m) => {
    const msg = m as JsonRpcLike | null
    return msg && typeof msg === 'object' && msg.method === 'tools/call' && typeof msg.params?.name === 'string' ? [msg.params.name] : []
  })
}

/** Scopes the token lacks for the tools this body calls (empty: allowed). */
export function missingToolScopes(body: unknown, granted: ReadonlySet<string>, toolScopes: ReadonlyMap<string, string>): string[] {
  const needed = calledTools(body).flatMap((tool) => {
    const scope = toolScopes.get(tool)
    return scope === undefined ? [] : [scope]
  })
  return [...new Set(needed.filter((s) => !granted.has(s)))]
}

export function requireToolScopes(config: Config, toolScopes: ReadonlyMap<string, string>) {
  const metadata = resourceMetadataUrl(config)
  return async (request: FastifyRequest) => {
    const granted = request.principal?.scopes ?? new Set<string>()
    const missing = missingToolScopes(request.body, granted, toolScopes)
    if (missing.length === 0) return
    const scope = missing.join(' ')
    const tools = calledTools(request.body).filter((t) => missing.includes(toolScopes.get(t) ?? ''))
    const message = `The tool ${[...new Set(tools)].join(', ')} needs the scope ${scope}, which the access token does not grant.`
    throw new AppError(
      'insufficient_scope',
      message,
      `request the scope ${scope} when you ask for a token (the client must be allowed it)`,
      {
        'www-authenticate': challenge({ error: 'insufficient_scope', error_description: message, scope, resource_metadata: metadata }),
      },
    )
  }
}
