// Per-tool authorization, as the MCP Apps authorization guide and OpenAI's Apps SDK describe it:
// public tools work without a token; each tool declares what it needs in its descriptor
// (`securitySchemes`); a protected tool called without a sufficient token answers a tool error
// carrying the RFC 6750 challenge in `_meta["mcp/www_authenticate"]`, so the host can ask for a
// token without the session failing. Plain functions: tested without HTTP.
import type { CallToolResult } from '@modelcontextprotocol/server'
import { bearerChallenge } from '../../plugins/auth/rules.js'
import { type Caller, failure } from './tool.js'

/** SEP-1488 / Apps SDK security schemes of a tool descriptor. */
export type SecurityScheme = { type: 'noauth' } | { type: 'oauth2'; scopes: string[] }

/** What a tool needs, as configured: its scope (none: public) and whether callers without a token may call it. */
export interface ToolPolicy {
  scope?: string
  anonymous: boolean
}

export const WWW_AUTHENTICATE_META = 'mcp/www_authenticate'

export function securitySchemes(policy: ToolPolicy): SecurityScheme[] {
  if (policy.scope === undefined) return [{ type: 'noauth' }]
  const oauth2: SecurityScheme = { type: 'oauth2', scopes: [policy.scope] }
  return policy.anonymous ? [{ type: 'noauth' }, oauth2] : [oauth2]
}

export type Admission =
  /** `anonymous`: let in without a token through a protected tool (its per-address budget applies). */
  | { allowed: true; anonymous: boolean }
  /** `no_token`: a token is needed; `insufficient_scope`: the token lacks the scope. */
  | { allowed: false; refusal: 'no_token' | 'insufficient_scope'; scope: string }

/** Whether this caller may call a tool with this policy. */
export function admit(policy: ToolPolicy, caller: Caller): Admission {
  const { scope } = policy
  if (scope === undefined) return { allowed: true, anonymous: false }
  if (caller.clientId === null)
    return policy.anonymous ? { allowed: true, anonymous: true } : { allowed: false, refusal: 'no_token', scope }
  return caller.scopes.has(scope) ? { allowed: true, anonymous: false } : { allowed: false, refusal: 'insufficient_scope', scope }
}

/** Where the challenge points: the MCP resource and its RFC 9728 metadata. */
export interface ChallengeTarget {
  resource: string
  resourceMetadata: string
}

/**
 * The tool error of a refused call, with its challenge: without a token, only the scope and the
 * metadata (RFC 6750 §3.1: no error code when no credentials were sent); with a token lacking
 * the scope, `insufficient_scope`.
 */
export function challengeResult(tool: string, refused: Extract<Admission, { allowed: false }>, target: ChallengeTarget): CallToolResult {
  const { scope } = refused
  const message =
    refused.refusal === 'no_token'
      ? `The tool ${tool} needs an access token with the scope ${scope}.`
      : `The tool ${tool} needs the scope ${scope}, which the access token does not grant.`
  const hint = `sign in as the studio's staff (the challenge's resource metadata names the authorization server), or use a token from POST /api/token requested with resource=${target.resource} and the scope ${scope}`
  const challenge =
    refused.refusal === 'no_token'
      ? bearerChallenge({ scope, resource_metadata: target.resourceMetadata })
      : bearerChallenge({ error: 'insufficient_scope', error_description: message, scope, resource_metadata: target.resourceMetadata })
  return { ...failure(message, hint), _meta: { [WWW_AUTHENTICATE_META]: [challenge] } }
}
