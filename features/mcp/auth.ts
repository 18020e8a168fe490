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
import { MCP_PATH, protectedResources, RESOURCE_METADATA_PATH, resourceMetadata } from '../../plugins/auth/resources.js'
import { bearerChallenge as challenge } from '../../plugins/auth/rules.js'
import { AppError } from '../../plugins/errors/codes.js'

export const PROTECTED_RESOURCE_PATH = `${RESOURCE_METADATA_PATH}${MCP_PATH}`

export const mcpResource = (config: Config): string => protectedResources(config.publicBaseUrl).mcp
export const resourceMetadataUrl = (config: Config): string => protectedResources(config.publicBaseUrl).metadataUrl.mcp

/** RFC 9728 protected-resource metadata of /mcp: tokens for it are requested with resource=<resource>. */
export function protectedResourceMetadata(config: Config, scopes: readonly string[], resourceName: string) {
  return resourceMetadata(config.publicBaseUrl, mcpResource(config), scopes, resourceName)
}

/**
 * `/mcp?signin`: the URL the studio's staff paste into hosts that start their OAuth flow only on an
 * HTTP 401 (Claude, the MCP SDK's clients, the Inspector): without a token it answers 401 with the
 * challenge, so the host signs the person in; with one it is /mcp. Plain `/mcp` stays public.
 */
export const SIGN_IN_QUERY = 'signin'

export function refuseBadToken(config: Config) {
  const metadata = resourceMetadataUrl(config)
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    if (request.headers.authorization === undefined) {
      if (!Object.hasOwn((request.query ?? {}) as object, SIGN_IN_QUERY)) return payload
      const hint = 'sign in: this URL is for the studio’s staff; the public tools are at /mcp without ?signin'
      throw new AppError('unauthorized', 'The MCP endpoint at this URL needs an access token.', hint, {
        'www-authenticate': challenge({ scope: 'read:leads', resource_metadata: metadata }),
      })
    }
    if (request.principal?.via === 'OAuth2') return payload
    const hint =
      request.authFailure ?? 'send "Authorization: Bearer <access_token>" with a token from POST /api/token, or no Authorization at all'
    throw new AppError('unauthorized', 'The access token sent to the MCP endpoint is not valid here.', hint, {
      'www-authenticate': challenge({ error: 'invalid_token', error_description: hint, resource_metadata: metadata }),
    })
  }
}
