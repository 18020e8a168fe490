// Rate limiting with @fastify/rate-limit: per operation from the spec's `x-rate-limit` (set on
// each route's config by the routes plugin, through `app.budgets`), keyed by the verified client,
// else by address. Its checks are route-level onRequest hooks, so they run after the auth
// plugin's app-level onRequest hook has resolved the caller: a forged token never spends another
// client's budget, it is keyed by the caller's address instead.
// A response that no route-level limiter counted (a failure before it ran: a CORS preflight, a
// body refused on an unknown path, a malformed URL) is counted against the default budget as it
// is sent, so every response to a request that was read carries the rate-limit headers.
import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { type Config, ConfigError } from '../../config.js'
import { AppError } from '../errors/codes.js'
import { addressOf } from './address.js'
import { Budgets, DEFAULT_BUDGET } from './budgets.js'
import { fallbackStore } from './store.js'

/** The caller's address as budgets count it: IPv4, or an IPv6 address's /64 network. */
export const clientAddress = (request: FastifyRequest): string => addressOf(request.ip)

export const rateLimitKey = (request: FastifyRequest): string =>
  request.principal ? `client:${request.principal.clientId}` : `addr:${clientAddress(request)}`

declare module 'fastify' {
  interface FastifyInstance {
    /** Every rate-limit budget by name, with the configuration's overrides applied. */
    budgets: Budgets
    /** The shared counters' Redis client, when REDIS_URL is set. */
    redis: Redis | undefined
    /** Counts a response no route-level limiter counted against the default budget, with its headers. */
    countUncounted(request: FastifyRequest, reply: FastifyReply): Promise<void>
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
    const budgets = new Budgets(config.rateLimits)
    app.decorate('budgets', budgets)
    // Once every route has taken its budget: a RATE_LIMITS name no budget has is a mistake.
    app.addHook('onReady', async () => {
      const unknown = budgets.unknownNames()
      if (unknown.length > 0) {
        throw new ConfigError(
          `Invalid configuration: RATE_LIMITS names ${unknown.map((n) => `"${n}"`).join(', ')}, which no rate limit has; the names are: ${budgets.names().join(', ')}`,
        )
      }
    })

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
    const fallback = budgets.resolve('default', DEFAULT_BUDGET)
    await app.register(rateLimit, {
      ...(store && { store }),
      global: true,
      max: fallback.max,
      timeWindow: fallback.window,
      keyGenerator: rateLimitKey,
      errorResponseBuilder: (_request, context) =>
        new AppError(
          'rate_limited',
          `Too many requests: the limit is ${context.max} per window.`,
          `retry after ${Math.max(1, Math.ceil(context.ttl / 1000))} seconds (see Retry-After)`,
        ),
    })

    const defaultLimiter = app.createRateLimit({ max: fallback.max, timeWindow: fallback.window, keyGenerator: rateLimitKey })
    async function countUncounted(request: FastifyRequest, reply: FastifyReply): Promise<void> {
      const counted = await defaultLimiter(request)
      if (counted.isAllowed) return
      reply.header('x-ratelimit-limit', counted.max)
      reply.header('x-ratelimit-remaining', counted.remaining)
      reply.header('x-ratelimit-reset', counted.ttlInSeconds)
    }
    app.decorate('countUncounted', countUncounted)
    // Callback style: no promise for the responses a route's limiter counted (nearly all).
    app.addHook('onSend', (request, reply, payload, done) => {
      if (reply.hasHeader('x-ratelimit-limit') || request.routeOptions.config?.rateLimit === false) return done(null, payload)
      countUncounted(request, reply).then(
        () => done(null, payload),
        () => done(null, payload),
      )
    })
  },
  { name: 'rate-limit', fastify: '5.x' },
)
