// The auth plugin: issues access tokens, resolves the caller of every request once (so the
// rate limiter can key on a verified client), counts failed client authentications, and provides
// glue's security handlers, named after the spec's securitySchemes and fed each operation's
// scopes from the spec.
import { randomUUID } from 'node:crypto'
import fastifyJwt from '@fastify/jwt'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import type { components } from '../../generated/openapi.js'
import { AppError } from '../errors/codes.js'
import { bootstrapClient, type ClientAdmin } from './admin.js'
import { ClientStatusCache, type Standing } from './client-status.js'
import { type ClientRow, ClientsRepository } from './clients.js'
import { type FailureGuard, failureGuard } from './failures.js'
import type { SecurityHandler } from './gate.js'
import { databaseSigningKey } from './keys.js'
import { protectedResources, type Resources, resourceMetadata } from './resources.js'
import {
  accessTokenClaimsProblem,
  audienceIncludes,
  bearerChallenge,
  missingScopes,
  PERSON_CLAIM,
  parseBearer,
  tokenFailureHint,
  tokenTimesProblem,
} from './rules.js'
import { databasePepper, hashSecret, secretMatches } from './secrets.js'
import { type VerifiedToken, VerifiedTokens } from './verified-tokens.js'

export interface Principal {
  clientId: string
  /** The staff member a person's token was issued to (its `person` claim, equal to `sub`); absent for a machine's. */
  person?: string
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
    /** The resource whose tokens this route accepts (RFC 8707 `aud`); default the REST API's. */
    tokenAudience?: string
  }
  interface FastifyInstance {
    auth: Auth
    /** Failed client authentications, counted so a stranger cannot lock the rightful client out. */
    authFailures: FailureGuard
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
  /** A token for the given resources (its `aud`; see resources.ts). */
  issue(client: ClientRow, scopes: string[], audience: readonly string[]): TokenResponse
  /** The resources tokens can be requested for. */
  resources: Resources
  jwks(): { keys: object[] }
  /** RFC 8414 authorization server metadata (made once: it depends on the configuration only). */
  metadata: components['schemas']['AuthorizationServerMetadata']
  /** RFC 9728 metadata of the REST API as a protected resource (made once, likewise). */
  resourceMetadata: components['schemas']['ProtectedResourceMetadata']
  /** Named after the spec's security schemes; the routes' security gate calls them. */
  securityHandlers: Record<string, SecurityHandler>
  /** Clients and API keys, for the bootstrap and the tests (the CLI builds its own). */
  admin: ClientAdmin
}

const REALM = 'studio-api'

// Compared against when the client id is unknown, so that both paths take the same time.
const DUMMY_HASH = '0'.repeat(64)

/**
 * The private claim that carries the generation of the client's secret a token was issued under
 * (tokens issued before generations existed have none: generation 0).
 */
const GENERATION_CLAIM = 'sgen'

/** Why a client's token no longer stands, for the 401 hint. */
const NOT_STANDING: Record<Exclude<Standing, 'valid'>, string> = {
  revoked: 'this client has been revoked or no longer exists; ask the studio for new credentials',
  rotated: "this client's secret has been rotated since the token was issued; request a new token with the new secret",
}

/**
 * RFC 6750 §3.1: the error code only when credentials were presented and refused; RFC 9728 §5.1:
 * where the resource's metadata is, so that a client can find the authorization server from a 401.
 */
function unauthorized(scheme: string, hint: string, presented: boolean, metadataUrl: string): AppError {
  const refused = scheme === 'OAuth2' && presented
  const challenge = bearerChallenge({
    realm: REALM,
    error: refused ? 'invalid_token' : undefined,
    error_description: refused ? hint : undefined,
    resource_metadata: metadataUrl,
  })
  return new AppError('unauthorized', 'This operation needs a valid access token.', hint, { 'www-authenticate': challenge })
}

/**
 * `ClientBasic`, the token endpoint's client authentication: checked by the endpoint itself
 * (handlers/issueToken.ts) once the body is read, because its RFC 6749 §2.3.1 alternative,
 * client_secret_post, carries the credentials in the body, and because a failure there is an RFC
 * 6749 `invalid_client` (with a Basic challenge), not a bearer 401. Before the body nothing can be
 * refused.
 */
const authenticatedByTheEndpoint: SecurityHandler = async () => {}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const clients = new ClientsRepository(app.store.db, app.store.dialect)
    const pepper = await databasePepper(app.store.db, config)
    const admin: ClientAdmin = { clients, pepper, scopes: app.spec.scopes }
    const key = await databaseSigningKey(app.store.db, config)
    const issuer = config.publicBaseUrl
    const resources = protectedResources(config.publicBaseUrl)

    // expiresIn is in seconds: @fastify/jwt reads a number as seconds (not milliseconds). `aud`
    // is each token's own (its resources), so it is in the payload, not a signing default; the
    // verifier accepts every resource of ours and each route then checks that it is named.
    await app.register(fastifyJwt, {
      secret: { private: key.privatePem, public: key.publicPem },
      sign: {
        algorithm: 'EdDSA',
        iss: issuer,
        kid: key.kid,
        header: { alg: 'EdDSA', typ: 'at+jwt' },
        expiresIn: config.tokenTtlSeconds,
      },
      verify: {
        algorithms: ['EdDSA'],
        allowedIss: issuer,
        allowedAud: [...resources.all],
        checkTyp: 'at+jwt',
        requiredClaims: ['iss', 'aud', 'exp', 'iat', 'jti', 'sub', 'client_id', 'scope'],
        // No fast-jwt cache: verifiedTokens (below) keeps what passed, keyed by the token itself.
        cache: false,
      },
    })

    const status = new ClientStatusCache(async (id) => {
      const row = await clients.find(id)
      return row && { active: row.revoked_at === null, generation: row.secret_generation }
    }, config.clientStatusTtlSeconds * 1000)

    // A person's token (features/staff) stands while the person is staff: removing them ends it
    // within the same TTL on every instance.
    const people = new ClientStatusCache(async (id) => {
      const row = await app.store.db.selectFrom('staff').select('id').where('id', '=', id).executeTakeFirst()
      return row && { active: true, generation: 0 }
    }, config.clientStatusTtlSeconds * 1000)

    const verifiedTokens = new VerifiedTokens(10_000, 60_000)

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
      const now = Date.now()
      const verified = verifiedTokens.get(token, now) ?? verifyToken(request, token, now)
      if (verified === undefined) return
      const resource = request.routeOptions.config?.tokenAudience ?? resources.api
      if (!audienceIncludes(verified.payload.aud, resource)) {
        request.authFailure = `the access token was issued for another resource; request one with resource=${resource} from /api/token`
        return
      }
      if (verified.person !== undefined) {
        if ((await people.standing(verified.person, 0)) !== 'valid') {
          request.authFailure = 'the person this token was issued to is no longer among the studio’s staff'
          return
        }
        request.principal = { clientId: verified.clientId, person: verified.person, scopes: verified.scopes, via: 'OAuth2' }
        return
      }
      const standing = await status.standing(verified.clientId, verified.generation)
      if (standing !== 'valid') {
        request.authFailure = NOT_STANDING[standing]
        return
      }
      request.principal = { clientId: verified.clientId, scopes: verified.scopes, via: 'OAuth2' }
    }

    /** Signature, claims and times: once per token (then verifiedTokens has it), or why not. */
    function verifyToken(request: FastifyRequest, token: string, now: number): VerifiedToken | undefined {
      let payload: Record<string, unknown>
      try {
        payload = app.jwt.verify<Record<string, unknown>>(token)
      } catch (err) {
        const code = (err as { code?: string }).code
        request.authFailure = (code === 'FAST_JWT_INVALID_CLAIM_VALUE' && foreignIssuer(token)) || tokenFailureHint(code)
        return undefined
      }
      const problem = accessTokenClaimsProblem(payload) ?? tokenTimesProblem(payload, Math.floor(now / 1000), config.tokenTtlSeconds)
      if (problem) {
        request.authFailure = `${problem}; request a new token from /api/token`
        return undefined
      }
      const generation = payload[GENERATION_CLAIM]
      // A person's token names the person (features/staff: `person`, the same as `sub`); a
      // machine's never does. Told apart by that claim, never by guessing.
      const person = payload[PERSON_CLAIM]
      if (person !== undefined && (typeof person !== 'string' || person !== payload.sub)) {
        request.authFailure = 'the access token names a person inconsistently; request a new token'
        return undefined
      }
      const entry = {
        payload,
        clientId: payload.client_id as string,
        ...(typeof person === 'string' && { person }),
        scopes: new Set(String(payload.scope).split(' ')),
        generation: typeof generation === 'number' ? generation : 0,
      }
      return verifiedTokens.set(token, entry, payload.exp as number, now)
    }

    /** Issuers named by tokens of our key that this instance refused, each logged once. */
    const foreignIssuers = new Set<string>()

    /**
     * A token signed with this server's key (fast-jwt checks the signature before the claims, so a
     * claim's value is what failed) but issued as another base URL: another instance on the same
     * database with another PUBLIC_BASE_URL issued it, or this one before its PUBLIC_BASE_URL
     * changed. Behind a load balancer the first refuses tokens now and then, whichever instance
     * answers: the operator hears of it once per issuer, and the caller's hint says where tokens
     * for this server come from. Undefined when the issuer is ours (another claim failed).
     */
    function foreignIssuer(token: string): string | undefined {
      const iss = app.jwt.decode<Record<string, unknown>>(token)?.iss
      if (typeof iss !== 'string' || iss === issuer) return undefined
      if (!foreignIssuers.has(iss) && foreignIssuers.size < 16) {
        foreignIssuers.add(iss)
        app.log.warn(
          { token_issuer: iss, issuer },
          "refused a token signed with this server's key but issued as another base URL: instances that share a database must share PUBLIC_BASE_URL, or each refuses the tokens of the others (after a change of PUBLIC_BASE_URL, tokens issued before it are refused until they expire)",
        )
      }
      return `the access token was issued as ${iss}, and this server issues and accepts tokens as ${issuer}; request a new token from ${issuer}/api/token`
    }

    async function resolveApiKey(request: FastifyRequest, presented: string): Promise<void> {
      const row = await clients.findApiKeyByHash(hashSecret(pepper, presented))
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
            {
              'www-authenticate': bearerChallenge({
                realm: REALM,
                error: 'insufficient_scope',
                scope: scopes.join(' '),
                resource_metadata: resources.metadataUrl.api,
              }),
            },
          )
        }
        const presented = request.headers.authorization !== undefined || request.headers['x-api-key'] !== undefined
        if (!presented && request.routeOptions.config?.allowAnonymous) return
        if (request.authFailure) throw unauthorized(scheme, request.authFailure, true, resources.metadataUrl.api)
        throw unauthorized(
          scheme,
          scheme === 'OAuth2'
            ? 'send "Authorization: Bearer <access_token>" with a token from POST /api/token'
            : 'send your API key in the X-API-Key header',
          presented,
          resources.metadataUrl.api,
        )
      }
    }

    const auth: Auth = {
      admin,
      async authenticateClient(clientId, secret) {
        const row = await clients.find(clientId)
        const ok = secretMatches(pepper, secret, row?.secret_hash ?? DUMMY_HASH)
        return ok && row && row.revoked_at === null ? row : undefined
      },
      resources,
      issue(client, scopes, audience) {
        const scope = scopes.join(' ')
        // One resource is written as a string (as tokens have always been), several as a list.
        const aud = audience.length === 1 ? audience[0] : [...audience]
        const access_token = app.jwt.sign({
          sub: client.id,
          client_id: client.id,
          aud,
          scope,
          jti: randomUUID(),
          [GENERATION_CLAIM]: client.secret_generation,
        })
        return { access_token, token_type: 'Bearer', expires_in: config.tokenTtlSeconds, scope }
      },
      jwks: () => ({ keys: [key.jwk] }),
      metadata: {
        issuer,
        token_endpoint: `${issuer}/api/token`,
        jwks_uri: `${issuer}/.well-known/jwks.json`,
        grant_types_supported: ['client_credentials'],
        // RFC 8414 requires it; only the client-credentials grant is offered, which uses none.
        response_types_supported: [],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        scopes_supported: [...app.spec.scopes],
        service_documentation: `${issuer}/docs`,
        protected_resources: [...resources.all],
      },
      resourceMetadata: resourceMetadata(issuer, resources.api, app.spec.scopes, app.spec.title),
      securityHandlers: { OAuth2: requirePrincipal('OAuth2'), ApiKey: requirePrincipal('ApiKey'), ClientBasic: authenticatedByTheEndpoint },
    }
    app.decorate('auth', auth)
    app.decorate('authFailures', failureGuard(app))

    await bootstrapClient(app.log, config, admin)
  },
  { name: 'auth', fastify: '5.x', dependencies: ['spec', 'store', 'rate-limit'] },
)
