// /mcp as an OAuth 2.0 resource server (MCP authorization spec, RFC 9728, RFC 6750, RFC 8707).
//
// /mcp is public: a request without credentials is served as an anonymous caller, and each tool
// decides what it needs (access.ts). The auth plugin has already verified a bearer token that is
// sent, against /mcp's own resource (`aud`), into `request.principal`. Here, refuseBadToken
// (preParsing, after the rate limiter): credentials that were sent and refused are never taken
// as anonymous, but answered 401 with `WWW-Authenticate: Bearer error="invalid_token", …,
// resource_metadata="…"` and the API's Error body.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../../config.js'
import { protectedResources } from '../auth/resources.js'
import { bearerChallenge as challenge } from '../auth/rules.js'
import { AppError } from '../errors/codes.js'

export const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource/mcp'

export const mcpResource = (config: Config): string => protectedResources(config.publicBaseUrl).mcp
export const resourceMetadataUrl = (config: Config): string => `${config.publicBaseUrl}${PROTECTED_RESOURCE_PATH}`

/** RFC 9728 protected-resource metadata of /mcp: tokens for it are requested with resource=<resource>. */
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

export function refuseBadToken(config: Config) {
  const metadata = resourceMetadataUrl(config)
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    if (request.headers.authorization === undefined || request.principal?.via === 'OAuth2') return payload
    const hint =
      request.authFailure ?? 'send "Authorization: Bearer <access_token>" with a token from POST /api/token, or no Authorization at all'
    throw new AppError('unauthorized', 'The access token sent to the MCP endpoint is not valid here.', hint, {
      'www-authenticate': challenge({ error: 'invalid_token', error_description: hint, resource_metadata: metadata }),
    })
  }
}
