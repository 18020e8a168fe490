// One error handler for every route: every failure becomes the spec's Error body.
// Unknown paths answer 404, known paths with the wrong method 405 with `Allow`; a 404 is a page
// for a browser (html.ts), the Error body for everything else. What the server writes before
// there is a request (parser refusals, timeouts, CONNECT) is in raw.ts; framing a proxy may read
// otherwise (two Hosts, Transfer-Encoding other than chunked alone) is refused first (framing.ts).
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Headers } from '../headers/index.js'
import { isStorageUnavailable, StorageLost, storageUnavailable } from '../store/unavailable.js'
import { AppError, type ErrorCode, UnreadableBody } from './codes.js'
import { framingProblem } from './framing.js'
import { sendNotFoundPage, wantsHtml } from './html.js'
import { jsonRpcFields } from './jsonrpc.js'
import { oauthFields } from './oauth.js'
import { refuseConnect, versionNotSupported } from './raw.js'

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
const hungUp = (request: FastifyRequest): boolean => request.raw.aborted || request.raw.socket?.destroyed === true

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
    return sendNotFoundPage(request, reply, request.server.spec.title)
  }
  return sendError(request, reply, error)
}

/**
 * Fastify's `frameworkErrors`: a URL it cannot decode, a path segment over its length limit.
 * Fastify answers these before routing, so no hook has run: the headers, the count against the
 * default budget and the log line every request gets are added here.
 */
export function frameworkErrorHandler(apiHeaders: Headers) {
  return async (err: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const error = toAppError(err, request)
    reply.headers(apiHeaders).header('x-request-id', request.id)
    await request.server.countUncounted(request, reply).catch(() => {})
    request.log.info({ method: request.method, status: error.statusCode, code: error.code }, 'request refused before routing')
    answerError(request, reply, error)
  }
}

/** An unknown path. */
export const notFound = (path: string): AppError =>
  new AppError('not_found', `There is nothing at ${path}.`, 'see /openapi.json or /docs for the paths this API serves')

/** RFC 9112 §3.2 (Node's own check is off: its 400 has no Error body). */
const noHost = () => new AppError('invalid_request', 'The request has no Host header.', 'send a Host header: HTTP/1.1 requires one')

/** HTTP/1.0 and 1.1 are served; llhttp lets HTTP/0.9 (a request line without a version too) and 2.0 through. */
const servedVersion = (major: number, minor: number): boolean => major === 1 && (minor === 0 || minor === 1)

export default fp<{ apiHeaders: Headers }>(
  async (app, { apiHeaders }) => {
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
      const raw = request.raw
      if (!servedVersion(raw.httpVersionMajor, raw.httpVersionMinor)) done(versionNotSupported())
      else if (request.headers.host === undefined && raw.httpVersion === '1.1') done(noHost())
      else done(framingProblem(raw))
    })

    // An Expect other than 100-continue: Node would answer 417 with an empty body. RFC 9110
    // §10.1.1 lets a server ignore it, so the request is answered as any other.
    app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res))
    // Expect: 100-continue. Left to itself Node sends 100 Continue before any hook has run,
    // inviting the body of a request about to be refused (no credentials: 401). Instead the
    // request goes through like any other and 100 Continue is sent when its body is first read:
    // only after the security gate and the body guard let it through (preParsing), never on a
    // refusal (the body of a refused request is not read; the connection is closed instead).
    app.server.on('checkContinue', (req, res) => {
      req.once('resume', () => {
        if (!res.headersSent && !res.writableEnded) res.writeContinue()
      })
      app.server.emit('request', req, res)
    })
    app.server.on('connect', (_req, socket) => refuseConnect(socket, apiHeaders))

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
      return answerError(request, reply, error)
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
      return answerError(request, reply, notFound(path))
    })
  },
  { name: 'errors', fastify: '5.x', dependencies: ['spec', 'rate-limit'] },
)
