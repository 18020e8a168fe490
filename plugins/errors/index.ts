// One error handler for every route: every failure becomes the spec's Error body.
// Unknown paths answer 404, known paths with the wrong method 405 with `Allow`.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { isStorageUnavailable, storageUnavailable } from '../store/unavailable.js'
import { AppError, type ErrorCode } from './codes.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The Error code this request was answered with, if any (metrics). */
    errorCode: string | null
  }
  interface FastifyContextConfig {
    /** Errors also carry RFC 6749 §5.2 `error` and `error_description` (the token endpoint). */
    oauthErrors?: boolean
  }
}

const byStatus: Record<number, ErrorCode> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'insufficient_scope',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'idempotency_conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'service_unavailable',
}

/** Maps anything thrown to the AppError the client will see. */
export function toAppError(err: FastifyError | Error, request: FastifyRequest): AppError {
  if (err instanceof AppError) return err
  const wrapped = (err as { errors?: unknown }).errors
  if (Array.isArray(wrapped)) {
    // glue's SecurityError wraps the security handlers' errors; the most specific (403 over 401) wins.
    const inner = wrapped.filter((e: unknown): e is AppError => e instanceof AppError)
    return inner.find((e) => e.statusCode === 403) ?? inner[0] ?? new AppError('unauthorized')
  }
  const code = (err as FastifyError).code
  switch (code) {
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AppError('invalid_request', 'The request body is empty.', 'send a JSON object in the body')
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError(
        'invalid_request',
        'The request body is not valid JSON.',
        'check the body for a syntax error, such as a missing quote or a trailing comma',
      )
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
  }
  if (isStorageUnavailable(err)) return storageUnavailable()
  const status = (err as FastifyError).statusCode
  if (status !== undefined && status < 500 && byStatus[status]) return new AppError(byStatus[status])
  if (status === 503) return new AppError('service_unavailable')
  return new AppError('internal_error')
}

/** What the operation accepts, from the spec's request body content types. */
export function contentTypeHint(request: FastifyRequest): string {
  const body = (request.routeOptions.schema as { body?: { content?: object } } | undefined)?.body
  const types = Object.keys(body?.content ?? {})
  return types.length > 0 ? `send the body as ${types.join(' or ')}` : 'send no body'
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  request.errorCode = error.code
  const body: Record<string, string> = { ...error.toBody() }
  if (request.routeOptions.config?.oauthErrors) {
    body.error = error.code
    body.error_description = error.hint ? `${error.message} ${error.hint}` : error.message
    reply.header('cache-control', 'no-store')
  }
  return reply.code(error.statusCode).headers(error.headers).send(body)
}

export default fp<{ version: string }>(
  async (app, { version }) => {
    app.decorateRequest('errorCode', null)
    // Paths and the methods registered for them, to tell 405 from 404.
    const methodsByPath = new Map<string, Set<string>>()
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method]
      const set = methodsByPath.get(route.url) ?? new Set<string>()
      for (const m of methods) set.add(m)
      methodsByPath.set(route.url, set)
    })

    // Callback-style hooks here and in the other per-request hooks: no promise per request.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header('x-api-version', version)
      reply.header('x-request-id', request.id)
      done()
    })

    app.setErrorHandler((err: FastifyError | Error, request, reply) => {
      const error = toAppError(err, request)
      if (error.statusCode >= 500) {
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
  { name: 'errors', fastify: '5.x', dependencies: ['rate-limit'] },
)
