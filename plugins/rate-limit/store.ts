// Where rate-limit counters live. With Redis, every instance shares one budget per client; while
// Redis is unreachable each instance falls back to its own in-memory counters (the same limits,
// per instance), so the API keeps serving and still refuses floods. Counting returns to Redis as
// soon as it answers again.
import { createRequire } from 'node:module'
import type { Redis } from 'ioredis'

const require = createRequire(import.meta.url)
// The plugin's own stores: @fastify/rate-limit exposes a `store` option for a custom class.
const LocalStore = require('@fastify/rate-limit/store/LocalStore') as StoreClass
const RedisStore = require('@fastify/rate-limit/store/RedisStore') as StoreClass

type Result = { current: number; ttl: number }
type Callback = (err: Error | null, res: Result | null) => void

interface CounterStore {
  incr(key: string, cb: Callback, timeWindow: number, max: number): void
  read(key: string, cb: Callback, timeWindow: number, max: number): void
  child(routeOptions: object): CounterStore
}

type StoreClass = new (...args: unknown[]) => CounterStore

/** Builds the `store` class @fastify/rate-limit instantiates, bound to a Redis client. */
export function fallbackStore(redis: Redis, prefix: string, onFallback: (err: Error) => void) {
  class FallbackStore implements CounterStore {
    constructor(
      params: { continueExceeding?: boolean; exponentialBackoff?: boolean },
      private readonly remote: CounterStore = new RedisStore(params.continueExceeding, params.exponentialBackoff, redis, prefix),
      private readonly local: CounterStore = new LocalStore(params.continueExceeding, params.exponentialBackoff, 10_000),
    ) {}

    private run(op: 'incr' | 'read', key: string, cb: Callback, timeWindow: number, max: number): void {
      if (redis.status !== 'ready') {
        this.local[op](key, cb, timeWindow, max)
        return
      }
      this.remote[op](
        key,
        (err, res) => {
          if (!err) return cb(null, res)
          onFallback(err)
          this.local[op](key, cb, timeWindow, max)
        },
        timeWindow,
        max,
      )
    }

    incr(key: string, cb: Callback, timeWindow: number, max: number): void {
      this.run('incr', key, cb, timeWindow, max)
    }

    read(key: string, cb: Callback, timeWindow: number, max: number): void {
      this.run('read', key, cb, timeWindow, max)
    }

    child(routeOptions: object): CounterStore {
      return new FallbackStore({}, this.remote.child(routeOptions), this.local.child(routeOptions))
    }
  }
  return FallbackStore
}
