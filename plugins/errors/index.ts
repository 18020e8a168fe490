// One error handler for every route: every failure becomes the spec's Error body.
// Unknown paths answer 404, known paths with the wrong method 405 with `Allow`; a 404 is a page
// for a browser (html.ts), the Error body for everything else (answer.ts: how any error is answered). What the server writes before
// there is a request (parser refusals, timeouts, CONNECT) is in raw.ts; framing a proxy may read
// otherwise (two Hosts, Transfer-Encoding other than chunked alone) is refused first (framing.ts).
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Headers } from '../headers/index.js'
import { StorageLost } from '../store/unavailable.js'
import { answerError, hungUp, notFound, sendError, toAppError } from './answer.js'
import { AppError } from './codes.js'
import { framingProblem } from './framing.js'
import { defaultSite } from './html.js'
import { refuseConnect, versionNotSupported } from './raw.js'

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

/** RFC 9112 §3.2 (Node's own check is off: its 400 has no Error body). */
const noHost = () => new AppError('invalid_request', 'The request has no Host header.', 'send a Host header: HTTP/1.1 requires one')

/** HTTP/1.0 and 1.1 are served; llhttp lets HTTP/0.9 (a request line without a version too) and 2.0 through. */
const servedVersion = (major: number, minor: number): boolean => major === 1 && (minor === 0 || minor === 1)

export default fp<{ apiHeaders: Headers }>(
  async (app, { apiHeaders }) => {
    app.decorateRequest('errorCode', null)
    // The site its HTML 404 pages name: the spec's title, until a feature names the studio.
    app.decorate('site', defaultSite(app.spec.title))
    // Paths and the methods registered for them, to tell 405 from 404. OPTIONS is CORS's
    // preflight (plugins/cors), never a method a path offers.
    const methodsByPath = new Map<string, Set<string>>()
    app.addHook('onRoute', (route) => {
      const methods = (Array.isArray(route.method) ? route.method : [route.method]).filter((m) => m !== 'OPTIONS')
      if (methods.length === 0) return
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
