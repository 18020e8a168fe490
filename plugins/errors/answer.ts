// How an error is answered: anything thrown becomes the AppError the client sees, and the answer
// is the spec's Error body (with the OAuth or JSON-RPC fields where the route asks for them) or, for
// a browser's 404, the page. Services for features and plugins; index.ts registers the handlers.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { isStorageUnavailable, storageUnavailable } from '../store/unavailable.js'
import { AppError, type ErrorCode, UnreadableBody } from './codes.js'
import { sendNotFoundPage, wantsHtml } from './html.js'
import { jsonRpcFields } from './jsonrpc.js'
import { oauthFields } from './oauth.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The Error code this request was answered with, if any (metrics). */
    errorCode: string | null
  }
  interface FastifyContextConfig {
    /** Errors also carry RFC 6749 §5.2 `error` and `error_description` (the token endpoint). */
    oauthErrors?: boolean
    /**
     * Errors are also JSON-RPC 2.0 error responses (`jsonrpc`, `id`, `error: {code, message}`), the
     * form MCP clients read (/mcp; codes in jsonrpc.ts).
     */
    jsonRpcErrors?: boolean
  }
}

/**
 * The code of an error another library raised with only a status (@fastify/static, Fastify).
 * A 403 there refuses a file path, which is no business of the caller: it is answered as 404.
 */
const byStatus: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'not_found',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  408: 'request_timeout',
  409: 'idempotency_conflict',
  412: 'precondition_failed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  416: 'range_not_satisfiable',
  429: 'rate_limited',
  431: 'headers_too_large',
  503: 'service_unavailable',
  505: 'http_version_not_supported',
}

/** Maps anything thrown to the AppError the client will see. */
export function toAppError(err: FastifyError | Error, request: FastifyRequest): AppError {
  if (err instanceof AppError) return err
  const code = (err as FastifyError).code
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': {
      const limit = request.routeOptions.bodyLimit
      return new AppError(
        'payload_too_large',
        `The request body is larger than this operation accepts (${limit} bytes).`,
        `send at most ${limit} bytes`,
      )
    }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('unsupported_media_type', undefined, contentTypeHint(request))
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new UnreadableBody('The Content-Length header does not match the body.', 'send the exact length of the body')
    case 'FST_ERR_BAD_URL':
      return new AppError('invalid_request', 'The URL is malformed.', 'percent-encode special characters in the path')
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // A path segment longer than any id this API has.
      return new AppError('not_found', 'There is nothing at this path.', 'see /openapi.json or /docs for the paths this API serves')
  }
  if (isStorageUnavailable(err)) return storageUnavailable()
  const status = (err as FastifyError).statusCode
  const known = status === undefined ? undefined : byStatus[status]
  if (known) return new AppError(known)
  // Any other 4xx is still the caller's to fix, never a crash of ours.
  if (status !== undefined && status >= 400 && status < 500) return new AppError('invalid_request')
  return new AppError('internal_error')
}

/** The client closed the connection before its request was whole (hung up mid-body). */
export const hungUp = (request: FastifyRequest): boolean => request.raw.aborted || request.raw.socket?.destroyed === true

/** What the operation accepts, from the spec's request body content types. */
export function contentTypeHint(request: FastifyRequest): string {
  const body = (request.routeOptions.schema as { body?: { content?: object } } | undefined)?.body
  const types = Object.keys(body?.content ?? {})
  return types.length > 0 ? `send the body as ${types.join(' or ')}` : 'send no body'
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  request.errorCode = error.code
  const body: Record<string, unknown> = { ...error.toBody() }
  const config = request.routeOptions.config
  if (config?.oauthErrors) {
    Object.assign(body, oauthFields(error))
    reply.header('cache-control', 'no-store')
  } else if (config?.jsonRpcErrors) {
    Object.assign(body, jsonRpcFields(error))
  }
  // Answered before the body was read (credentials, content type, closing): the connection is
  // closed rather than kept waiting for the rest of a body nobody reads.
  if (request.raw.complete === false) reply.header('connection', 'close')
  return reply.code(error.statusCode).headers(error.headers).send(body)
}

/**
 * The Error body, or for a browser asking for something that is not there, the 404 page. Routes
 * whose errors are read by programs whatever they accept (the token endpoint's RFC 6749 errors,
 * /mcp's JSON-RPC) always get the body.
 */
export function answerError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  const config = request.routeOptions.config
  if (error.code === 'not_found' && !config?.oauthErrors && !config?.jsonRpcErrors && wantsHtml(request)) {
    return sendNotFoundPage(request, reply)
  }
  return sendError(request, reply, error)
}

/** An unknown path. */
export const notFound = (path: string): AppError =>
  new AppError('not_found', `There is nothing at ${path}.`, 'see /openapi.json or /docs for the paths this API serves')
