// Liveness and readiness, outside the spec's rate limits and auth, and the shutting-down state:
// once close starts, new requests on open connections get 503 service_unavailable (our Error
// shape, not Fastify's) while in-flight requests finish.
// The API's /readyz is public: it says ready (200 `{status}`) or not (503), never which storage
// engine runs or whether Redis answers. Those details are `app.readiness()`, served on the
// metrics listener's own /readyz (plugins/metrics/listener.ts), which only the operator reaches.
import fp from 'fastify-plugin'
import { AppError } from '../errors/codes.js'
import { StorageLost } from '../store/unavailable.js'

/** What the operator sees of readiness (the metrics listener's /readyz). */
export interface Readiness {
  status: 'ready' | 'not ready'
  /** The storage engine. */
  storage: string
  /** `lost`: the SQLite file was deleted or replaced under the server (the log names it). */
  storage_state: 'ok' | 'unreachable' | 'lost'
  redis: 'ok' | 'not configured' | 'unreachable (rate limits counted per instance)'
  closing: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: { closing: boolean }
    /** Readiness with its details: for the operator, never on the API's port. */
    readiness(): Promise<Readiness>
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

    async function readiness(): Promise<Readiness> {
      const [storage, redis] = await Promise.all([
        within(app.store.ping(), 1000).then(
          () => 'ok' as const,
          (err: unknown) => (err instanceof StorageLost ? ('lost' as const) : ('unreachable' as const)),
        ),
        !app.redis
          ? ('not configured' as const)
          : within(app.redis.ping(), 500).then(
              () => 'ok' as const,
              () => 'unreachable (rate limits counted per instance)' as const,
            ),
      ])
      const ready = storage === 'ok' && !lifecycle.closing
      return {
        status: ready ? 'ready' : 'not ready',
        storage: app.store.dialect,
        storage_state: storage,
        redis,
        closing: lifecycle.closing,
      }
    }
    app.decorate('readiness', readiness)

    app.get('/readyz', { config: { rateLimit: false } }, async () => {
      const { status } = await readiness()
      if (status !== 'ready') {
        // Public: neither the engine nor the file, nor Redis. The log and the metrics listener's
        // /readyz say which.
        throw new AppError('service_unavailable', 'This instance is not ready: its storage does not answer.', 'retry shortly', {
          'retry-after': '5',
        })
      }
      return { status }
    })
  },
  { name: 'health', fastify: '5.x', dependencies: ['store', 'rate-limit'] },
)
