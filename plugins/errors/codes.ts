// The one list of error codes (the spec's ErrorCode enum): status and default message, once.
import type { components } from '../../generated/openapi.js'

export type ErrorCode = components['schemas']['ErrorCode']
export type ErrorBody = components['schemas']['Error']

export const errorCodes: Record<ErrorCode, { status: number; message: string }> = {
  invalid_request: { status: 400, message: 'The request is invalid.' },
  unauthorized: { status: 401, message: 'This operation needs a valid access token.' },
  insufficient_scope: { status: 403, message: 'The access token does not grant this operation.' },
  not_found: { status: 404, message: 'There is nothing at this path.' },
  method_not_allowed: { status: 405, message: 'This path does not accept that method.' },
  not_acceptable: { status: 406, message: 'The response cannot be given in any media type the request accepts.' },
  idempotency_conflict: { status: 409, message: 'This Idempotency-Key was already used with a different body.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  unsupported_media_type: { status: 415, message: 'The request body is in a content type this operation does not accept.' },
  rate_limited: { status: 429, message: 'Too many requests: the budget of this window is spent.' },
  internal_error: { status: 500, message: 'Something went wrong on our side. It has been logged; please try again.' },
  service_unavailable: { status: 503, message: 'The service is temporarily unavailable. Please retry shortly.' },
  invalid_client: { status: 401, message: 'Client authentication failed.' },
  invalid_grant: { status: 400, message: 'The grant is invalid.' },
  invalid_scope: { status: 400, message: 'The requested scope is invalid for this client.' },
  unsupported_grant_type: { status: 400, message: 'This grant type is not supported.' },
  invalid_target: { status: 400, message: 'The requested resource is not one this server issues tokens for.' },
  origin_not_allowed: { status: 403, message: 'Requests from this origin are not allowed.' },
  request_timeout: { status: 408, message: 'The request did not arrive in time; the connection is closed.' },
  precondition_failed: { status: 412, message: 'A precondition of the request (If-Match, If-Unmodified-Since) does not hold.' },
  range_not_satisfiable: { status: 416, message: 'The requested range is outside the resource.' },
  headers_too_large: { status: 431, message: 'The request line and headers are too large.' },
  http_version_not_supported: { status: 505, message: 'This server speaks HTTP/1.1 (and 1.0) only.' },
}

/** An error the API answers with as it is: status from the list, Error body, extra headers. */
export class AppError extends Error {
  readonly statusCode: number
  readonly headers: Record<string, string>
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly hint?: string,
    headers: Record<string, string> = {},
  ) {
    super(message ?? errorCodes[code].message)
    this.name = 'AppError'
    this.statusCode = errorCodes[code].status
    this.headers = headers
  }

  toBody(): ErrorBody {
    return this.hint === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, hint: this.hint }
  }
}

/**
 * A request body that could not be read as what it claims to be: empty, malformed JSON, or a
 * length that does not match. An invalid_request like any other; on /mcp, JSON-RPC's parse error.
 */
export class UnreadableBody extends AppError {
  constructor(message: string, hint: string) {
    super('invalid_request', message, hint)
    this.name = 'UnreadableBody'
  }
}
