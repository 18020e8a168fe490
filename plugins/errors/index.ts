// One error handler for every route: every failure becomes the spec's Error body.
// Unknown paths answer 404, known paths with the wrong method 405 with `Allow`. What the server
// writes before there is a request (parser refusals, timeouts, CONNECT) is in raw.ts.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { isStorageUnavailable, StorageLost, storageUnavailable } from '../store/unavailable.js'
import { AppError, type ErrorCode } from './codes.js'
import { oauthFields } from './oauth.js'
import { refuseConnect } from './raw.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The Error code this request was answered with, if any (metrics). */
    errorCode: string | null
  }
  interface FastifyContextConfig {
    /** Errors also carry RFC 6749 §5.2 `error` and `error_description` (the token endpoint). */
    oauthErrors?: boolean
    /**
     * Errors are also JSON-RPC 2.0 error responses (`jsonrpc`, `id: null`, `error: {code, message}`),
     * the form MCP clients read (/mcp).
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
      return new AppError('invalid_request', 'The Content-Length header does not match the body.', 'send the exact length of the body')
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
const hungUp = (request: FastifyRequest): boolean => request.raw.aborted || request.raw.socket?.destroyed === true

/** What the operation accepts, from the spec's request body content types. */
export function contentTypeHint(request: FastifyRequest): string {
  const body = (request.routeOptions.schema as { body?: { content?: object } } | undefined)?.body
  const types = Object.keys(body?.content ?? {})
  return types.length > 0 ? `send the body as ${types.join(' or ')}` : 'send no body'
}

/** JSON-RPC's code for an error of the server's own, outside the reserved protocol errors. */
const JSON_RPC_SERVER_ERROR = -32000

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  request.errorCode = error.code
  const body: Record<string, unknown> = { ...error.toBody() }
  const config = request.routeOptions.config
  if (config?.oauthErrors) {
    Object.assign(body, oauthFields(error))
    reply.header('cache-control', 'no-store')
  } else if (config?.jsonRpcErrors) {
    // No request id is known before the body is read: JSON-RPC answers those errors with id null.
    Object.assign(body, { jsonrpc: '2.0', id: null, error: { code: JSON_RPC_SERVER_ERROR, message: error.message } })
  }
  // Answered before the body was read (credentials, content type, closing): the connection is
  // closed rather than kept waiting for the rest of a body nobody reads.
  if (request.raw.complete === false) reply.header('connection', 'close')
  return reply.code(error.statusCode).headers(error.headers).send(body)
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot decode, a path segment over its length limit.
 * Fastify answers these before routing, so no hook has run: the headers, the count against the
 * default budget and the log line every request gets are added here.
 */
export function frameworkErrorHandler(version: string) {
  return async (err: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const error = toAppError(err, request)
    reply.header('x-api-version', version).header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
    await request.server.countUncounted(request, reply).catch(() => {})
    request.log.info({ method: request.method, status: error.statusCode, code: error.code }, 'request refused before routing')
    sendError(request, reply, error)
  }
}

/** RFC 9112 §3.2 (Node's own check is off: its 400 has no Error body). */
const noHost = () => new AppError('invalid_request', 'The request has no Host header.', 'send a Host header: HTTP/1.1 requires one')

export default fp(
  async (app) => {
    const version = app.spec.version
    app.decorateRequest('errorCode', null)
    // Paths and the methods registered for them, to tell 405 from 404.
    const methodsByPath = new Map<string, Set<string>>()
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method]
      const set = methodsByPath.get(route.url) ?? new Set<string>()
      for (const m of methods) set.add(m)
      methodsByPath.set(route.url, set)
    })

    // Callback style, as the other per-request hooks: no promise per request. The version and
    // request id headers are the headers plugin's, set before this runs.
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.headers.host === undefined && request.raw.httpVersion === '1.1') done(noHost())
      else done()
    })

    // An Expect other than 100-continue: Node would answer 417 with an empty body. RFC 9110
    // §10.1.1 lets a server ignore it, so the request is answered as any other.
    app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res))
    app.server.on('connect', (_req, socket) => refuseConnect(socket, version))

    app.setErrorHandler((err: FastifyError | Error, request, reply) => {
      if (hungUp(request)) {
        // Nobody to answer, and nothing went wrong here: one line, no stack.
        request.log.info({ path: request.url.split('?')[0] }, 'connection closed before the request was complete')
        request.errorCode = 'client_closed'
        return reply.code(400).send()
      }
      const error = toAppError(err, request)
      if (error.code === 'service_unavailable') {
        // Storage away: no stack per request (the store says once what happened, and a lost
        // database file once why).
        if (!(err instanceof StorageLost) && !(err instanceof AppError)) {
          request.log.warn({ err: { type: err.name, message: err.message, code: (err as FastifyError).code } }, 'storage unavailable')
        }
      } else if (error.statusCode >= 500) {
        // Only the error's own text and stack: never request data, never the body.
        request.log.error(
          { err: { type: err.name, message: err.message, stack: err.stack, code: (err as FastifyError).code } },
          'request failed',
        )
      }
      return sendError(request, reply, error)
    })

    app.setNotFoundHandler({ preHandler: app.rateLimit() }, async (request, reply) => {
      const path = request.url.split('?')[0] ?? '/'
      const methods = methodsByPath.get(path)
      if (methods && !methods.has(request.method)) {
        const allow = [...methods].sort().join(', ')
        return sendError(
          request,
          reply,
          new AppError('method_not_allowed', `${path} does not accept ${request.method}.`, `use ${allow}`, { allow }),
        )
      }
      return sendError(
        request,
        reply,
        new AppError('not_found', `There is nothing at ${path}.`, 'see /openapi.json or /docs for the paths this API serves'),
      )
    })
  },
  { name: 'errors', fastify: '5.x', dependencies: ['spec', 'rate-limit'] },
)
