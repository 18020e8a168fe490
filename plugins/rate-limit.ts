// Rate limiting with @fastify/rate-limit: per operation from the spec's `x-rate-limit` (set on
// each route's config by the operation resolver), keyed by the verified client, else by address.
// Runs at onRequest, after the auth plugin has resolved the caller, so a forged token never
// spends another client's budget: it is keyed by the caller's address instead.
import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../config.js'
import type { FailureGuard } from '../handlers/deps.js'
import { AppError } from './errors/codes.js'
import { fallbackStore } from './rate-limit-store.js'

/** Budget for routes outside the spec's operations (docs, discovery, unknown paths). */
export const DEFAULT_LIMIT = { max: 300, window: '1 minute' }

export const rateLimitKey = (request: FastifyRequest): string =>
  request.principal ? `client:${request.principal.clientId}` : `addr:${request.ip}`

/** Failed client authentications allowed per window, per client id and per address. */
export const AUTH_FAILURES = { max: 10, window: '1 minute' }

declare module 'fastify' {
  interface FastifyInstance {
    authFailures: FailureGuard
    /** The shared counters' Redis client, when REDIS_URL is set. */
    redis: Redis | undefined
  }
  interface FastifyRequest {
    authAttemptClient: string
  }
}

/** A Redis client that fails fast while Redis is away (no offline queue) and reconnects forever. */
export async function connectRedis(url: string): Promise<Redis> {
  // Loaded only when Redis is configured.
  const { Redis } = await import('ioredis')
  return new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: 500,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
    lazyConnect: false,
  })
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    let store: FastifyRateLimitStoreCtor | undefined
    const redis = config.redisUrl ? await connectRedis(config.redisUrl) : undefined
    app.decorate('redis', redis)
    if (redis) {
      let warned = false
      redis.on('error', (err) => {
        if (!warned)
          app.log.warn({ err: { message: err.message } }, 'Redis unreachable: rate limits are counted per instance until it is back')
        warned = true
      })
      redis.on('ready', () => {
        if (warned) app.log.info('Redis reachable again: rate limits are shared')
        warned = false
      })
      app.addHook('onClose', async () => {
        redis.disconnect()
      })
      store = fallbackStore(redis, `${config.redisPrefix}rl:`, () => {}) as unknown as FastifyRateLimitStoreCtor
    }
    await app.register(rateLimit, {
      ...(store && { store }),
      global: true,
      max: DEFAULT_LIMIT.max,
      timeWindow: DEFAULT_LIMIT.window,
      keyGenerator: rateLimitKey,
      errorResponseBuilder: (_request, context) =>
        new AppError(
          'rate_limited',
          `Too many requests: the limit is ${context.max} per window.`,
          `retry after ${Math.max(1, Math.ceil(context.ttl / 1000))} seconds (see Retry-After)`,
        ),
    })

    // Failed client authentications, in the same store as every other counter.
    app.decorateRequest('authAttemptClient', '')
    const byAddress = app.createRateLimit({
      max: AUTH_FAILURES.max,
      timeWindow: AUTH_FAILURES.window,
      keyGenerator: (req) => `authfail:addr:${req.ip}`,
    })
    const byClient = app.createRateLimit({
      max: AUTH_FAILURES.max,
      timeWindow: AUTH_FAILURES.window,
      keyGenerator: (req) => `authfail:client:${req.authAttemptClient}`,
    })
    app.decorate('authFailures', {
      async retryAfter(request, clientId) {
        request.authAttemptClient = clientId
        const seen = await Promise.all([byAddress(request, { increment: false }), byClient(request, { increment: false })])
        const spent = seen.filter((r) => !r.isAllowed && r.remaining === 0)
        return spent.length === 0 ? 0 : Math.max(1, ...spent.map((r) => (r.isAllowed ? 0 : r.ttlInSeconds)))
      },
      async record(request, clientId) {
        request.authAttemptClient = clientId
        await byAddress(request)
        await byClient(request)
      },
    } satisfies FailureGuard)
  },
  { name: 'rate-limit', fastify: '5.x', dependencies: ['auth'] },
)
