// Rate limiting with @fastify/rate-limit: per operation from the spec's `x-rate-limit` (set on
// each route's config by the routes plugin, through `app.budgets`), keyed by the verified client,
// else by address. Its checks are route-level onRequest hooks, so they run after the auth
// plugin's app-level onRequest hook has resolved the caller: a forged token never spends another
// client's budget, it is keyed by the caller's address instead.
// A response that no route-level limiter counted (a failure before it ran: a CORS preflight, a
// body refused on an unknown path, a malformed URL) is counted against the default budget as it
// is sent, so every response to a request that was read carries the rate-limit headers.
// Counting is counters.ts's (in memory, or shared through Redis at less than a round trip per
// request), through the store of store.ts.
import { once } from 'node:events'
import rateLimit, { type CreateRateLimitOptions, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { Counter, Gauge, Histogram } from 'prom-client'
import type { Config } from '../../config.js'
import { clientAddress } from '../../lib/address.js'
import { AppError } from '../errors/codes.js'
import { Budgets, checkRateLimitNames, DEFAULT_BUDGET, shareOf } from './budgets.js'
import { Counters } from './counters.js'
import { connectRedis, redisRemote } from './redis.js'
import { type BudgetOption, counterStore } from './store.js'

export const rateLimitKey = (request: FastifyRequest): string =>
  request.principal ? `client:${request.principal.clientId}` : `addr:${clientAddress(request)}`

/** createRateLimit's options with the budget the limiter counts against (store.ts). */
export const limiterOptions = (budget: BudgetOption, options: CreateRateLimitOptions): CreateRateLimitOptions =>
  ({ ...options, budget }) as CreateRateLimitOptions

declare module 'fastify' {
  interface FastifyInstance {
    /** Every rate-limit budget by name, with the configuration's overrides applied. */
    budgets: Budgets
    /** The shared counters' Redis client, when REDIS_URL is set. */
    redis: Redis | undefined
    /** Where every budget is counted (in memory, or shared through Redis): counters.ts. */
    counters: Counters
    /** Counts a response no route-level limiter counted against the default budget, with its headers. */
    countUncounted(request: FastifyRequest, reply: FastifyReply): Promise<void>
  }
}

/** How long start-up waits for Redis before counting locally (it joins when Redis answers). */
const REDIS_START_MS = 1000

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const budgets = new Budgets(config.rateLimits)
    app.decorate('budgets', budgets)
    // Once every route has taken its budget: a RATE_LIMITS name no budget has is a mistake. app.ts
    // checks the same before anything is created; this holds for an app built some other way.
    app.addHook('onReady', async () => checkRateLimitNames(config.rateLimits, budgets.names()))

    const redis = config.redisUrl ? await connectRedis(config.redisUrl) : undefined
    app.decorate('redis', redis)
    const counters = sharedCounters(app, config, redis)
    app.decorate('counters', counters)
    if (redis) {
      // The counters notice Redis failing on their next call, and say so; the client's own errors
      // (reconnection attempts) are not worth a line each.
      redis.on('error', () => {})
      redis.on('close', () => counters.toLocal('the connection to Redis closed'))
      // Not waiting long: an instance whose Redis is away starts anyway, counting locally.
      const ready =
        redis.status === 'ready' ||
        (await Promise.race([
          once(redis, 'ready').then(
            () => true,
            () => false,
          ),
          sleep(REDIS_START_MS),
        ]))
      if (!ready) counters.toLocal(`Redis did not answer within ${REDIS_START_MS} ms of start-up`)
    }
    app.addHook('onClose', async () => {
      await counters.close()
      redis?.disconnect()
    })
    const store = counterStore(counters, shareOf) as unknown as FastifyRateLimitStoreCtor
    const fallback = budgets.resolve('default', DEFAULT_BUDGET)
    await app.register(rateLimit, {
      store,
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

    const defaultLimiter = app.createRateLimit(
      limiterOptions('default', { max: fallback.max, timeWindow: fallback.window, keyGenerator: rateLimitKey }),
    )
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
  { name: 'rate-limit', fastify: '5.x', dependencies: ['metrics'] },
)

const sleep = (ms: number) => new Promise<false>((resolve) => setTimeout(() => resolve(false), ms).unref())

/** The counters, with their log lines and metrics. */
function sharedCounters(app: FastifyInstance, config: Config, redis: Redis | undefined): Counters {
  const registers = [app.metrics.registry]
  const shared = new Gauge({
    name: 'studio_rate_limit_shared',
    help: 'Whether rate limits are counted in Redis, shared by every instance (1), or by this instance alone (0: no REDIS_URL, or Redis failed).',
    registers,
  })
  const fallbacks = new Counter({
    name: 'studio_rate_limit_local_fallbacks_total',
    help: 'Times this instance began counting rate limits on its own because Redis failed (connection lost, or no answer within 500 ms).',
    registers,
  })
  const calls = new Counter({
    name: 'studio_rate_limit_redis_calls_total',
    help: 'Redis calls of the rate limiter, by kind: take (a lease, or a charge), give (unspent tokens back), ping (a probe while counting locally).',
    labelNames: ['kind'],
    registers,
  })
  const waits = new Histogram({
    name: 'studio_rate_limit_redis_wait_seconds',
    help: 'How long requests waited for Redis to count them (no token or credit left on this instance; every request of a security budget), by outcome: answered, or timed_out (counted locally after REDIS_WAIT_MS).',
    labelNames: ['outcome'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1],
    registers,
  })
  const byKind = { take: calls.labels('take'), give: calls.labels('give'), ping: calls.labels('ping') }
  const answered = waits.labels('answered')
  const timedOut = waits.labels('timed_out')
  shared.set(redis ? 1 : 0)
  return new Counters({
    remote: redis && redisRemote(redis),
    prefix: `${config.redisPrefix}rl:`,
    waitMs: config.redisWaitMs,
    onLocal: (reason) => {
      shared.set(0)
      fallbacks.inc()
      app.log.warn({ reason }, 'Redis unavailable: rate limits are counted per instance until it answers again')
    },
    onShared: () => {
      shared.set(1)
      app.log.info('Redis answers again: rate limits are shared')
    },
    onSlow: (waitMs) =>
      app.log.warn({ waitMs }, 'Redis is slower than REDIS_WAIT_MS: requests it has not counted in time are counted per instance'),
    onCall: (kind) => byKind[kind].inc(),
    onWait: (inTime, waitedMs) => (inTime ? answered : timedOut).observe(waitedMs / 1000),
  })
}
