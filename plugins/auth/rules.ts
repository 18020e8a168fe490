// Token and scope rules as plain functions: each returns a reason (or a result), never throws,
// so they are tested without HTTP.
import { oauthText } from '../errors/oauth.js'

/** Scopes of `required` missing from `granted` (empty: allowed). */
export function missingScopes(granted: ReadonlySet<string>, required: readonly string[]): string[] {
  return required.filter((s) => !granted.has(s))
}

export type ScopeGrant = { ok: true; scopes: string[] } | { ok: false; reason: string; hint: string }

/**
 * The scopes a token gets: the requested subset of the client's allowed scopes, or all of them
 * when none is requested (RFC 6749 §3.3).
 */
export function grantScopes(requested: string | undefined, allowed: readonly string[]): ScopeGrant {
  if (requested === undefined) return { ok: true, scopes: [...allowed] }
  const wanted = requested.split(' ').filter(Boolean)
  if (wanted.length === 0 || requested.trim() !== requested || /\s{2,}/.test(requested)) {
    return {
      ok: false,
      reason: 'The scope parameter is malformed.',
      hint: 'send scopes separated by single spaces, e.g. "read:projects write:leads", or omit scope',
    }
  }
  const refused = wanted.filter((s) => !allowed.includes(s))
  if (refused.length > 0) {
    return {
      ok: false,
      reason: `This client may not have the scope ${refused.join(' ')}.`,
      hint: `request only scopes this client is allowed: ${allowed.join(' ') || '(none)'}`,
    }
  }
  return { ok: true, scopes: [...new Set(wanted)] }
}

export type ResourceGrant = { ok: true; audience: string[] } | { ok: false; reason: string; hint: string }

/**
 * The audience of a token from the RFC 8707 `resource` parameter(s): each must be an absolute URI
 * without a fragment naming one of the known resources (compared as URLs, so a trailing slash
 * does not matter); none requested means `fallback`.
 */
export function grantResources(
  requested: string | readonly string[] | undefined,
  known: readonly string[],
  fallback: string,
): ResourceGrant {
  if (requested === undefined) return { ok: true, audience: [fallback] }
  const hint = `ask for resource=${known.join(' or resource=')}, or omit resource for ${fallback}`
  const audience: string[] = []
  for (const value of typeof requested === 'string' ? [requested] : requested) {
    const match = URL.canParse(value) && !value.includes('#') ? known.find((k) => sameUrl(k, value)) : undefined
    if (match === undefined) {
      return { ok: false, reason: `The resource ${JSON.stringify(value.slice(0, 200))} is not one this server issues tokens for.`, hint }
    }
    if (!audience.includes(match)) audience.push(match)
  }
  return { ok: true, audience }
}

const sameUrl = (a: string, b: string): boolean => new URL(a).href === new URL(b).href

/** Whether a token's `aud` claim (one resource or a list) names this resource (RFC 8707 §2). */
export function audienceIncludes(aud: unknown, resource: string): boolean {
  return aud === resource || (Array.isArray(aud) && aud.includes(resource))
}

export type BasicCredentials = { clientId: string; secret: string }

/**
 * HTTP Basic client credentials (RFC 6749 §2.3.1: both parts form-urlencoded before base64).
 * undefined: no Basic header; null: a Basic header that cannot be read.
 */
export function parseBasicAuth(header: string | undefined): BasicCredentials | null | undefined {
  if (header === undefined) return undefined
  const m = /^Basic[ ]+([A-Za-z0-9+/]+=*)\s*$/i.exec(header)
  if (!m?.[1]) return /^Basic\b/i.test(header) ? null : undefined
  const decoded = Buffer.from(m[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon <= 0) return null
  try {
    const part = (s: string) => decodeURIComponent(s.replaceAll('+', ' '))
    return { clientId: part(decoded.slice(0, colon)), secret: part(decoded.slice(colon + 1)) }
  } catch {
    return null
  }
}

/** The bearer token of an Authorization header; null when the header is Bearer but malformed. */
export function parseBearer(header: string | undefined): string | null | undefined {
  if (header === undefined) return undefined
  const m = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header)
  if (m?.[1]) return m[1]
  return /^Bearer\b/i.test(header) ? null : undefined
}

/** Why a verified JWT's claims do not make an access token of ours (null: they do). */
export function accessTokenClaimsProblem(payload: Record<string, unknown>): string | null {
  if (typeof payload.client_id !== 'string' || payload.client_id.length === 0) return 'the token has no client_id'
  // A machine's token is about its client; a person's (the `person` claim) about the person.
  const subject = payload[PERSON_CLAIM] ?? payload.client_id
  if (payload.sub !== subject) return 'the token subject is neither its client nor its person'
  if (typeof payload.scope !== 'string') return 'the token has no scope claim'
  return null
}

/** How far ahead of this server's clock a token's `iat` may be (another instance's clock). */
export const CLOCK_SKEW_SECONDS = 60

/**
 * Why a verified token's times are not ones this server issues (null: they are). A token signed
 * with our key but dated in the future, or living longer than TOKEN_TTL_SECONDS, was not made by
 * the token endpoint: a leaked key or a bug, refused either way.
 */
export function tokenTimesProblem(payload: Record<string, unknown>, nowSeconds: number, maxLifetimeSeconds: number): string | null {
  const { iat, exp } = payload
  if (typeof iat !== 'number' || typeof exp !== 'number') return 'the token has no numeric iat and exp'
  if (iat > nowSeconds + CLOCK_SKEW_SECONDS) return 'the token is dated in the future (iat)'
  if (exp <= iat) return 'the token expires before it was issued'
  if (exp - iat > maxLifetimeSeconds) return `the token lives longer than this server issues tokens for (${maxLifetimeSeconds} s)`
  return null
}

/** A sentence for the hint of a 401, from fast-jwt's error code. */
export function tokenFailureHint(code: string | undefined): string {
  switch (code) {
    case 'FAST_JWT_EXPIRED':
      return 'the access token has expired; request a new one from /api/token'
    case 'FAST_JWT_INACTIVE':
      return 'the access token is not valid yet; check the clock of the system that made it'
    case 'FAST_JWT_MALFORMED':
    case 'FAST_JWT_INVALID_PAYLOAD':
      return 'the access token is malformed; send the access_token from /api/token as is'
    case 'FAST_JWT_INVALID_ALGORITHM':
    case 'FAST_JWT_MISSING_SIGNATURE':
    case 'FAST_JWT_INVALID_SIGNATURE':
    case 'FAST_JWT_INVALID_TYPE':
      return 'the access token was not issued by this server; request one from /api/token'
    default:
      return 'the access token is not valid here; request a new one from /api/token'
  }
}

/** An RFC 6750 §3 quoted parameter value: only the characters RFC 6749 allows in descriptions. */
const quoted = (s: string): string => `"${oauthText(s)}"`

/** An RFC 6750 `WWW-Authenticate: Bearer …` challenge; parameters left undefined are omitted. */
export function bearerChallenge(params: Record<string, string | undefined>): string {
  const parts = Object.entries(params)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${quoted(v)}`)
  return parts.length > 0 ? `Bearer ${parts.join(', ')}` : 'Bearer'
}

/** The claim of a person's token (features/staff) naming the person, as `sub` does; a machine's token has none. */
export const PERSON_CLAIM = 'person'
