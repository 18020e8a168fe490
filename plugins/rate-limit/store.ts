// The `store` @fastify/rate-limit counts with: the counters of counters.ts (in memory, or shared
// through Redis), named after the budget each limiter counts against. @fastify/rate-limit hands a
// store only a key; the budget comes from the limiter's options (`budget`, set by budgets.ts for
// the spec's operations and by the plugins for theirs), else from the route's path (`/mcp` is the
// `mcp` budget), else from the key itself (`<budget>:<caller>`, as features/mcp/anonymous.ts
// builds it). Its own RedisStore built names from the route (`rl:GET/project_metadata.json-…`,
// and `rl:undefinedundefined-…` for limiters made with createRateLimit, which have no route).
import type { Counters } from './counters.js'
import type { Verdict } from './leases.js'

type Callback = (err: Error | null, res: { current: number; ttl: number } | null) => void

/** A limiter's key → [budget, caller]. */
type Naming = (key: string) => [string, string]

/** The extra option a limiter names its budget with. */
export type BudgetOption = string | ((key: string) => string)

interface LimiterParams {
  budget?: BudgetOption
  routeInfo?: { url?: string }
}

function namingOf(params: LimiterParams): Naming {
  const { budget } = params
  if (typeof budget === 'string') return (key) => [budget, key]
  if (typeof budget === 'function') return (key) => [budget(key), key]
  const path = params.routeInfo?.url?.replace(/^\/+/, '')
  if (path) return (key) => [path, key]
  return (key) => {
    const colon = key.indexOf(':')
    return colon > 0 ? [key.slice(0, colon), key.slice(colon + 1)] : ['unnamed', key]
  }
}

/** The store class for @fastify/rate-limit's `store` option; the root store counts the `default` budget. */
export function counterStore(counters: Counters, shareOf: (budget: string, max: number) => number) {
  return class CounterStore {
    private readonly naming: Naming

    /** @fastify/rate-limit constructs the root store with its global options; children get a naming. */
    constructor(naming?: unknown) {
      this.naming = typeof naming === 'function' ? (naming as Naming) : (key) => ['default', key]
    }

    incr(key: string, cb: Callback, timeWindow: number, max: number): void {
      const [budget, caller] = this.naming(key)
      const verdict = counters.spend(budget, caller, max, timeWindow, shareOf(budget, max))
      if (verdict instanceof Promise) verdict.then((v: Verdict) => cb(null, v))
      else cb(null, verdict)
    }

    /** `{ increment: false }`: what this instance knows, without asking Redis. */
    read(key: string, cb: Callback, timeWindow: number): void {
      const [budget, caller] = this.naming(key)
      cb(null, counters.peek(budget, caller, timeWindow))
    }

    child(params: LimiterParams): CounterStore {
      return new CounterStore(namingOf(params))
    }
  }
}
