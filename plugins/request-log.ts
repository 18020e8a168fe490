// One log line per request, with its id. It holds the path (never the query string), the status,
// the operation, the client id and the time: never a header, a body, an email, a phone or a token.
import fp from 'fastify-plugin'

export default fp(
  async (app) => {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          path: request.url.split('?')[0],
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
