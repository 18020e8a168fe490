// The auth plugin: issues access tokens, resolves the caller of every request once (so the
// rate limiter can key on a verified client), and provides glue's security handlers, named
// after the spec's securitySchemes and fed each operation's scopes from the spec.
import { randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fastifyJwt from '@fastify/jwt'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { AppError } from '../errors/codes.js'
import type { ClientRow } from '../store/clients.js'
import { ClientStatusCache } from './client-status.js'
import { createClient } from './clients-admin.js'
import { loadSigningKey } from './keys.js'
import { ALL_SCOPES, accessTokenClaimsProblem, bearerChallenge, missingScopes, parseBearer, tokenFailureHint } from './rules.js'
import { hashSecret, loadPepper, secretMatches } from './secrets.js'

export interface Principal {
  clientId: string
  scopes: ReadonlySet<string>
  via: 'OAuth2' | 'ApiKey'
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified caller, or null. */
    principal: Principal | null
    /** Why presented credentials were refused (hint for the 401). */
    authFailure: string | null
  }
  interface FastifyContextConfig {
    /** The spec's security scheme names for this operation. */
    securitySchemes?: string[]
    /** Operator switch: the operation may be called without credentials. */
    allowAnonymous?: boolean
  }
  interface FastifyInstance {
    auth: Auth
  }
}

export interface TokenResponse {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  scope: string
}

export interface Auth {
  /** The client if the secret is right and the client active; undefined otherwise. */
  authenticateClient(clientId: string, secret: string): Promise<ClientRow | undefined>
  issue(client: ClientRow, scopes: string[]): TokenResponse
  jwks(): { keys: object[] }
  metadata(): Record<string, unknown>
  securityHandlers: Record<string, (req: FastifyRequest, reply: FastifyReply, scopes: string[]) => Promise<void>>
  pepper: string
}

const REALM = 'studio-api'

// fast-jwt's cache hands back the same payload object for a token it has verified before, so the
// token's scope set is built once per token, not once per request.
const scopeSets = new WeakMap<object, ReadonlySet<string>>()
function scopesOf(payload: Record<string, unknown>): ReadonlySet<string> {
  let scopes = scopeSets.get(payload)
  if (!scopes) {
    scopes = new Set(String(payload.scope).split(' '))
    scopeSets.set(payload, scopes)
  }
  return scopes
}
// Compared against when the client id is unknown, so that both paths take the same time.
const DUMMY_HASH = '0'.repeat(64)

/** RFC 6750 §3.1: the error code only when credentials were presented and refused. */
function unauthorized(scheme: string, hint: string, presented: boolean): AppError {
  const refused = scheme === 'OAuth2' && presented
  const challenge = bearerChallenge({
    realm: REALM,
    error: refused ? 'invalid_token' : undefined,
    error_description: refused ? hint : undefined,
  })
  return new AppError('unauthorized', 'This operation needs a valid access token.', hint, { 'www-authenticate': challenge })
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const store = app.store
    const pepper = loadPepper(config)
    const key = loadSigningKey(config)
    const issuer = config.publicBaseUrl
    const audience = config.publicBaseUrl

    // expiresIn is in seconds: @fastify/jwt reads a number as seconds (not milliseconds).
    await app.register(fastifyJwt, {
      secret: { private: key.privatePem, public: key.publicPem },
      sign: {
        algorithm: 'EdDSA',
        iss: issuer,
        aud: audience,
        kid: key.kid,
        header: { alg: 'EdDSA', typ: 'at+jwt' },
        expiresIn: config.tokenTtlSeconds,
      },
      verify: {
        algorithms: ['EdDSA'],
        allowedIss: issuer,
        allowedAud: audience,
        checkTyp: 'at+jwt',
        requiredClaims: ['iss', 'aud', 'exp', 'iat', 'jti', 'sub', 'client_id', 'scope'],
        cache: 10_000,
        cacheTTL: 60_000,
      },
    })

    const status = new ClientStatusCache(async (id) => {
      const row = await store.clients.find(id)
      return row !== undefined && row.revoked_at === null
    }, config.clientStatusTtlSeconds * 1000)

    app.decorateRequest('principal', null)
    app.decorateRequest('authFailure', null)

    // Resolve the caller once, before rate limiting (which keys on the verified client).
    app.addHook('onRequest', async (request) => {
      const bearer = parseBearer(request.headers.authorization)
      if (bearer === null) {
        request.authFailure = 'send the token as "Authorization: Bearer <access_token>"'
        return
      }
      if (bearer !== undefined) {
        await resolveBearer(request, bearer)
        return
      }
      const apiKey = request.headers['x-api-key']
      if (typeof apiKey === 'string' && request.routeOptions.config?.securitySchemes?.includes('ApiKey')) {
        await resolveApiKey(request, apiKey)
      }
    })

    async function resolveBearer(request: FastifyRequest, token: string): Promise<void> {
      let payload: Record<string, unknown>
      try {
        payload = app.jwt.verify<Record<string, unknown>>(token)
      } catch (err) {
        request.authFailure = tokenFailureHint((err as { code?: string }).code)
        return
      }
      const problem = accessTokenClaimsProblem(payload)
      if (problem) {
        request.authFailure = `${problem}; request a new token from /api/token`
        return
      }
      const clientId = payload.client_id as string
      if (!(await status.isActive(clientId))) {
        request.authFailure = 'this client has been revoked or no longer exists; ask the studio for new credentials'
        return
      }
      request.principal = { clientId, scopes: scopesOf(payload), via: 'OAuth2' }
    }

    async function resolveApiKey(request: FastifyRequest, presented: string): Promise<void> {
      const row = await store.clients.findApiKeyByHash(hashSecret(pepper, presented))
      if (!row || row.revoked_at !== null) {
        request.authFailure = 'the API key is unknown or revoked'
        return
      }
      request.principal = { clientId: row.id, scopes: new Set(row.scopes.split(' ')), via: 'ApiKey' }
    }

    function requirePrincipal(scheme: 'OAuth2' | 'ApiKey') {
      return async (request: FastifyRequest, _reply: FastifyReply, scopes: string[]): Promise<void> => {
        const p = request.principal
        if (p?.via === scheme) {
          const missing = missingScopes(p.scopes, scopes)
          if (missing.length === 0) return
          throw new AppError(
            'insufficient_scope',
            `This operation needs the scope ${missing.join(' ')}, which the ${scheme === 'OAuth2' ? 'access token' : 'API key'} does not grant.`,
            scheme === 'OAuth2'
              ? `request the scope ${missing.join(' ')} when you ask for a token (the client must be allowed it)`
              : `use an API key created with the scope ${missing.join(' ')}`,
            { 'www-authenticate': bearerChallenge({ realm: REALM, error: 'insufficient_scope', scope: scopes.join(' ') }) },
          )
        }
        const presented = request.headers.authorization !== undefined || request.headers['x-api-key'] !== undefined
        if (!presented && request.routeOptions.config?.allowAnonymous) return
        if (request.authFailure) throw unauthorized(scheme, request.authFailure, true)
        throw unauthorized(
          scheme,
          scheme === 'OAuth2'
            ? 'send "Authorization: Bearer <access_token>" with a token from POST /api/token'
            : 'send your API key in the X-API-Key header',
          presented,
        )
      }
    }

    const auth: Auth = {
      pepper,
      async authenticateClient(clientId, secret) {
        const row = await store.clients.find(clientId)
        const ok = secretMatches(pepper, secret, row?.secret_hash ?? DUMMY_HASH)
        return ok && row && row.revoked_at === null ? row : undefined
      },
      issue(client, scopes) {
        const scope = scopes.join(' ')
        const access_token = app.jwt.sign({ sub: client.id, client_id: client.id, scope, jti: randomUUID() })
        return { access_token, token_type: 'Bearer', expires_in: config.tokenTtlSeconds, scope }
      },
      jwks: () => ({ keys: [key.jwk] }),
      metadata: () => ({
        issuer,
        token_endpoint: `${issuer}/api/token`,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        grant_types_supported: ['client_credentials'],
        // RFC 8414 requires it; only the client-credentials grant is offered, which uses none.
        response_types_supported: [],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        scopes_supported: [...ALL_SCOPES],
        service_documentation: `${issuer}/docs`,
      }),
      securityHandlers: { OAuth2: requirePrincipal('OAuth2'), ApiKey: requirePrincipal('ApiKey') },
    }
    app.decorate('auth', auth)

    await bootstrapClient(app.log, config, store, pepper)
  },
  { name: 'auth', fastify: '5.x', dependencies: ['store'] },
)

/**
 * First start with no clients: create one with every scope, so the API is usable at once.
 * Its credentials come from configuration, or are written to an owner-only file whose path
 * (never the secret) is logged.
 */
async function bootstrapClient(
  log: { info: (o: object, m: string) => void },
  config: Config,
  store: import('../store/open.js').Store,
  pepper: string,
): Promise<void> {
  if (config.bootstrapClientId && config.bootstrapClientSecret) {
    if (!(await store.clients.find(config.bootstrapClientId))) {
      await createClient(store, pepper, {
        name: 'bootstrap',
        scopes: [...ALL_SCOPES],
        id: config.bootstrapClientId,
        secret: config.bootstrapClientSecret,
      })
      log.info({ client_id: config.bootstrapClientId }, 'bootstrap client created from configuration')
    }
    return
  }
  if ((await store.clients.count()) > 0) return
  const creds = await createClient(store, pepper, { name: 'bootstrap', scopes: [...ALL_SCOPES] })
  const file = join(config.dataDir, 'bootstrap-client.json')
  writeFileSync(file, `${JSON.stringify(creds, null, 2)}\n`, { mode: 0o600 })
  log.info({ client_id: creds.client_id, credentials_file: file }, 'bootstrap client created; its secret is in the credentials file')
}
