// One log line per request, with its id. It holds the path (never the query string), the status,
// the operation, the client id and the time: never a header, a body, an email, a phone or a token.
// A route whose path carries a secret (a one-time link's token) says so (`secretPath`): its line
// holds the route's pattern instead. Written on the app's logger with the id as a field, the same
// line the request's child logger would write.
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The path holds a secret (a link's token): the log line shows the route's pattern instead. */
    secretPath?: boolean
  }
}

export default fp(
  async (app) => {
    const log = app.log
    app.addHook('onResponse', (request, reply, done) => {
      log.info(
        {
          reqId: request.id,
          method: request.method,
          path: request.routeOptions.config?.secretPath ? request.routeOptions.url : request.url.split('?')[0],
          status: reply.statusCode,
          operation: (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId,
          client: request.principal?.clientId,
          ms: Math.round(reply.elapsedTime * 100) / 100,
        },
        'request',
      )
      done()
    })
  },
  { name: 'request-log', fastify: '5.x' },
)
