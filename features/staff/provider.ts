// The person-facing authorization server: panva's oidc-provider 8 (OpenID certified; the release
// line that supports Node 20, as this project does), configured
// for what the studio's staff need and nothing more: the authorization-code flow with PKCE (S256
// only, always), public clients named by a Client ID Metadata Document (cimd.ts) or, as the fallback, by
// Dynamic Client Registration, JWT access tokens (RFC 9068) for the resource asked (RFC 8707;
// /mcp when none is named) lasting 10 minutes, refresh tokens rotated on use (one used twice
// revokes its grant), revocation (RFC 7009), `iss` in every authorization response (RFC 9207).
// It signs with the same key as /api/token (one issuer, one JWKS) and keeps its records on our
// store (adapter.ts). Its routes are mounted by mount.ts; the sign-in and consent pages are ours
// (interactions.ts).
import { createHash, createPrivateKey, hkdfSync } from 'node:crypto'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { Kysely } from 'kysely'
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider'
import type { Config } from '../../config.js'
import type { SigningKey } from '../../plugins/auth/keys.js'
import type { Resources } from '../../plugins/auth/resources.js'
import type { Database } from '../../plugins/store/schema.js'
import type { StaffAccounts } from './accounts.js'
import { storeAdapter } from './adapter.js'
import { isDocumentUrl, type MetadataDocuments } from './cimd.js'
import { errorPage } from './pages.js'

/** The scope people are given (contract: "Scopes for people: read:leads"). */
export const PERSON_SCOPE = 'read:leads'
export const ACCESS_TOKEN_TTL_SECONDS = 600
/** The claim that marks a person's token (the person's id, as `sub`): a machine token has none. */
export { PERSON_CLAIM } from '../../plugins/auth/rules.js'

import { PERSON_CLAIM } from '../../plugins/auth/rules.js'

/** Where the provider's endpoints are (the token endpoint is /api/token's: mount.ts routes by grant). */
export const ROUTES = {
  authorization: '/oauth/authorize',
  token: '/api/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/.well-known/jwks.json',
} as const

export const interactionPath = (uid: string): string => `/oauth/sign-in/${uid}`

export interface ProviderParts {
  config: Config
  db: Kysely<Database>
  key: SigningKey
  resources: Resources
  accounts: StaffAccounts
  log: FastifyBaseLogger
  /** Clients named by their metadata document's URL (cimd.ts). */
  documents: MetadataDocuments
}

/** Keys for the provider's cookies, derived from the signing key: the same on every instance. */
export function cookieKeys(key: SigningKey): string[] {
  const secret = createHash('sha256').update(key.privatePem).digest()
  return [Buffer.from(hkdfSync('sha256', secret, 'studio-api', 'staff-cookies', 32)).toString('base64url')]
}

export function createProvider(parts: ProviderParts): Provider {
  const { config, key, resources, accounts, log } = parts
  const privateJwk = { ...createPrivateKey(key.privatePem).export({ format: 'jwk' }), kid: key.kid, alg: 'EdDSA', use: 'sig' }
  const configuration: Configuration = {
    adapter: storeAdapter(parts.db, (id) => parts.documents.find(id), isDocumentUrl),
    clients: [],
    jwks: { keys: [privateJwk as never] },
    routes: ROUTES,
    responseTypes: ['code'],
    scopes: ['offline_access'],
    claims: { openid: ['sub'] },
    pkce: { required: () => true, methods: ['S256'] },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_SECONDS,
      AuthorizationCode: 60,
      Interaction: 30 * 60,
      Session: 14 * 24 * 3600,
      Grant: 30 * 24 * 3600,
      RefreshToken: 30 * 24 * 3600,
    },
    cookies: {
      keys: cookieKeys(key),
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    interactions: { url: (_ctx, interaction) => interactionPath(interaction.uid) },
    // Token and revocation requests from a browser at any origin (the MCP Inspector): public
    // clients with PKCE and bearer tokens, no cookie read, so no client is tied to origins. The
    // CORS headers themselves are plugins/cors's (the provider leaves a response that has them).
    clientBasedCORS: () => true,
    async findAccount(_ctx, sub) {
      const staff = await accounts.find(sub)
      return staff && { accountId: staff.id, claims: async () => ({ sub: staff.id }) }
    },
    async extraTokenClaims(_ctx, token) {
      const accountId = (token as { accountId?: string }).accountId
      return token.kind === 'AccessToken' && accountId ? { [PERSON_CLAIM]: accountId } : undefined
    },
    features: {
      devInteractions: { enabled: false },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      introspection: { enabled: false },
      revocation: { enabled: true },
      registration: { enabled: true, initialAccessToken: false },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => resources.mcp,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx, resource) => {
          if (!resources.all.includes(resource)) throw new errors.InvalidTarget('this server issues tokens for its REST API and /mcp only')
          return {
            scope: PERSON_SCOPE,
            audience: resource,
            accessTokenTTL: ACCESS_TOKEN_TTL_SECONDS,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'EdDSA', kid: key.kid } },
          }
        },
      },
    },
    async renderError(ctx: KoaContextWithOIDC, out, error) {
      log.info({ err_code: out.error, client_id: ctx.oidc?.client?.clientId }, 'staff sign-in: authorization error page')
      ctx.type = 'html'
      ctx.set('content-security-policy', PAGE_CSP)
      ctx.set('cache-control', 'no-store')
      ctx.body = errorPage(String(out.error), String(out.error_description ?? ''))
      void error
    },
  }
  const provider = new Provider(config.publicBaseUrl, configuration)
  if (config.trustProxy) provider.proxy = true
  return provider
}

/** The sign-in pages' CSP: styles inline, the passkey script of our own, never framed. */
export const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"

/** A sign-in or enrolment page: never cached, under the pages' CSP. */
export const sendPage = (reply: FastifyReply, status: number, html: string) =>
  reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', PAGE_CSP)
    .send(html)
