// Liveness and readiness, outside the spec's rate limits and auth, and the shutting-down state:
// once close starts, new requests on open connections get 503 service_unavailable (our Error
// shape, not Fastify's) while in-flight requests finish.
import fp from 'fastify-plugin'
import { AppError } from '../errors/codes.js'
import { StorageLost } from '../store/unavailable.js'

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: { closing: boolean }
  }
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

const shuttingDown = () =>
  new AppError('service_unavailable', 'This instance is shutting down.', 'retry; the load balancer sends you to another instance', {
    connection: 'close',
    'retry-after': '1',
  })

export default fp(
  async (app) => {
    const lifecycle = { closing: false }
    app.decorate('lifecycle', lifecycle)
    app.addHook('preClose', async () => {
      lifecycle.closing = true
    })
    // preParsing: after rate limiting (so the headers are there), before any body is read.
    app.addHook('preParsing', (_request, _reply, payload, done) => {
      if (lifecycle.closing) done(shuttingDown())
      else done(null, payload)
    })

    app.get('/healthz', { config: { rateLimit: false } }, async () => ({ status: 'ok' }))

    app.get('/readyz', { config: { rateLimit: false } }, async () => {
      const storage = await within(app.store.ping(), 1000).then(
        () => 'ok',
        (err: unknown) => (err instanceof StorageLost ? 'lost' : 'unreachable'),
      )
      const redis = !app.redis
        ? 'not configured'
        : await within(app.redis.ping(), 500).then(
            () => 'ok',
            () => 'unreachable (rate limits counted per instance)',
          )
      if (storage === 'lost') {
        // Never the file's path: /readyz is public. The log says which file.
        throw new AppError(
          'service_unavailable',
          'The database file was deleted or replaced while the server had it open.',
          'restore the data folder and restart the server; the log names the file',
        )
      }
      if (storage !== 'ok') {
        throw new AppError(
          'service_unavailable',
          `Storage is unreachable (${app.store.dialect}).`,
          'retry shortly; the instance recovers by itself',
          {
            'retry-after': '5',
          },
        )
      }
      return { status: 'ready', storage: app.store.dialect, redis }
    })
  },
  { name: 'health', fastify: '5.x', dependencies: ['store', 'rate-limit'] },
)
