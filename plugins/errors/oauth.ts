// The RFC 6749 face of an error: the `error` code an OAuth client library acts on (RFC 6749's,
// and RFC 8707's invalid_target), and text in
// the only characters RFC 6749 §5.2 (and RFC 6750 §3 for challenges) allows in
// `error_description`: %x20-21 / %x23-5B / %x5D-7E, printable ASCII without `"` and `\`.
import type { components } from '../../generated/openapi.js'
import type { AppError, ErrorCode } from './codes.js'

export type OAuthErrorCode = components['schemas']['OAuthErrorCode']

/**
 * The RFC's own codes pass through; the rest become the RFC code a client library handles
 * right: retry later for a spent budget or an outage (never `invalid_client`, which tells a
 * client its credentials are wrong), `server_error` for a crash, `invalid_request` otherwise.
 */
const OAUTH_ERRORS: Record<ErrorCode, OAuthErrorCode> = {
  invalid_request: 'invalid_request',
  invalid_client: 'invalid_client',
  invalid_grant: 'invalid_grant',
  invalid_scope: 'invalid_scope',
  unsupported_grant_type: 'unsupported_grant_type',
  invalid_target: 'invalid_target',
  rate_limited: 'temporarily_unavailable',
  service_unavailable: 'temporarily_unavailable',
  internal_error: 'server_error',
  unauthorized: 'invalid_client',
  insufficient_scope: 'invalid_scope',
  not_found: 'invalid_request',
  method_not_allowed: 'invalid_request',
  idempotency_conflict: 'invalid_request',
  payload_too_large: 'invalid_request',
  unsupported_media_type: 'invalid_request',
  request_timeout: 'invalid_request',
  precondition_failed: 'invalid_request',
  range_not_satisfiable: 'invalid_request',
  headers_too_large: 'invalid_request',
  http_version_not_supported: 'invalid_request',
  origin_not_allowed: 'invalid_request',
  not_acceptable: 'invalid_request',
}

/** The RFC 6749 §5.2 fields of an error: its `error` code and `message` + `hint` as `error_description`. */
export function oauthFields(error: AppError): { error: OAuthErrorCode; error_description: string } {
  return {
    error: OAUTH_ERRORS[error.code],
    error_description: oauthText(error.hint === undefined ? error.message : `${error.message} ${error.hint}`),
  }
}

/** Typographic characters the messages use, in their ASCII form. */
const ASCII: Record<string, string> = { '"': "'", '\\': '/', '–': '-', '—': '-', '‘': "'", '’': "'", '“': "'", '”': "'", '…': '...' }

/**
 * `text` in RFC 6749 §5.2's character set: quotes and backslashes replaced, accents dropped
 * (é → e), anything else outside printable ASCII (control characters included) a space.
 */
export function oauthText(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, (c) => ASCII[c] ?? ' ')
}
