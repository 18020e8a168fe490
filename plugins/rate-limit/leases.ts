// Rate-limit counting that costs less than a Redis round trip per request (README "Scaling out").
//
// A budget is `max` requests per fixed window, per (budget, caller). A pair's window starts at its
// first request (with Redis: the first request any instance counted, on Redis' clock, which every
// instance adopts) and lasts the budget's window; the next starts at the next request after it.
//
// Without Redis an instance counts in its own memory. With Redis, an instance leases tokens: one
// atomic script (TAKE) adds to the window's counter in Redis what the instance asks for, never
// past `max`, and the instance then spends them locally, asking for the next lease in the
// background when half of it is spent. Redis' counter therefore counts every request any instance
// let through, or will have let through, and never more than `max` of them are leased: tokens do
// not overshoot. Two things let a request through without a token, and bound the overshoot:
//   - the share: while a lease is on its way, an instance lets up to `share` requests through on
//     credit (charged to Redis with its next TAKE), so a request never waits for Redis while there
//     is credit. Across N instances a budget can be overshot by at most N × share. `share` is 2 %
//     of the budget for ordinary budgets, and 0 for the security budgets, whose every request waits
//     for its own token (bounded by REDIS_WAIT_MS): they are exact while Redis answers;
//   - Redis trouble: a request that waited REDIS_WAIT_MS for its token is counted locally (from
//     the count the instance last saw, and charged to Redis later); a call that fails
//     (connection lost, or no answer within ioredis' 500 ms), or Redis answering nothing for 100 ms
//     while requests wait, switches the whole instance to counting locally until Redis answers a
//     ping, and what it counted meanwhile is then charged.
// A share an instance holds but does not spend is given back after IDLE_MS without requests, so
// other instances can use it; a token given back by a request that turned out not to count (a
// client authentication that succeeded) stays with the instance for its next request, and goes
// back to Redis when unused. Once Redis says a window is spent, the instance refuses locally (a
// local cache of over-limit keys, as Envoy's) and asks again at most every RECHECK_MS.
//
// This file holds the model: what Redis offers (Remote), what a request is told (Verdict), the
// state kept per pair (Entry) and the timings; counters.ts is the counting itself.

/** What an instance needs from Redis (redis.ts implements it with Lua scripts). */
export interface Remote {
  /**
   * Adds `charge` (requests already let through; dropped if they were counted in window `known`
   * and that window is over) to the pair's current window, starting one if there is none, and
   * grants up to `need` plus at most `extra` more tokens, never past `max`. Returns [granted, the
   * window's count after, its start, Redis' now] (ms on Redis' clock).
   */
  take(
    key: string,
    max: number,
    need: number,
    extra: number,
    charge: number,
    windowMs: number,
    known: number,
  ): Promise<[number, number, number, number]>
  /** Gives `n` unspent tokens back to the window that started at `start`, if it is still the current one. */
  give(key: string, n: number, start: number): Promise<unknown>
  ping(): Promise<unknown>
}

export interface Verdict {
  allowed: boolean
  /** The window's count as this instance knows it, this request included; `max + 1` when refused. */
  current: number
  /** Until the window ends, ms. */
  ttl: number
  /** The window's identity on this instance: a refund of this request names it. */
  window: number
}

export interface CountersOptions {
  /** Redis, when budgets are shared; without it, every instance counts on its own. */
  remote?: Remote | undefined
  /** Prefix of every key in Redis, e.g. `studio-api:rl:`. */
  prefix: string
  /** Longest a request waits for Redis (REDIS_WAIT_MS). */
  waitMs: number
  /** Redis answering nothing for this long while requests wait counts as failed; default max(100, 5 × waitMs). */
  hungMs?: number
  /** Pairs kept in memory at most; beyond, the least recently created is dropped. */
  maxEntries?: number
  now?: () => number
  /** Counting moved to this instance's memory (once per outage), and why. */
  onLocal?(reason: string): void
  /** Counting is shared through Redis again. */
  onShared?(): void
  /** Every Redis call, by kind (for metrics). */
  onCall?(kind: 'take' | 'give' | 'ping'): void
  /** A request that had to wait for Redis, and whether Redis answered in time. */
  onWait?(answered: boolean, waitedMs: number): void
  /** Redis left a request waiting longer than waitMs (said at most once a minute). */
  onSlow?(waitMs: number): void
}

export interface Waiter {
  resolve(v: Verdict): void
  timer: NodeJS.Timeout
  since: number
}

export interface Entry {
  readonly id: string
  readonly budget: string
  readonly caller: string
  readonly windowMs: number
  /** This window's identity on this instance (a new one when the window changes). */
  window: number
  /** When the window ends, on this instance's clock. */
  end: number
  /** When the window started on Redis' clock, once Redis has said (0: not yet). */
  redisStart: number
  readonly key: string
  readonly max: number
  readonly share: number
  /** Tokens leased from Redis (counted there), not yet spent. */
  tokens: number
  /** Requests let through without a token (on credit, or counted locally), not yet charged to Redis. */
  debt: number
  /** The part of the debt the TAKEs on their way are charging. */
  charging: number
  /** The waiting requests the TAKEs on their way ask tokens for. */
  asked: number
  /**
   * Of those, the requests let through locally since (their wait ran out): the tokens asked for
   * them pay their debt when they land, instead of going to a later request, and no TAKE charges
   * that debt meanwhile (it would be counted twice, and the later request let through on a token
   * that was this one's: one over the budget).
   */
  owed: number
  /** Redis' counter for the window as last seen (it includes this instance's leases). */
  used: number
  /** Redis said the window is spent: refuse locally until then. */
  overUntil: number
  /** What the instance had seen counted when it first counted on its own in this window. */
  localBase: number | undefined
  /** Requests it has let through on its own in this window (Redis late, or in trouble). */
  localAllowed: number
  /** TAKEs on their way. */
  inFlight: number
  waiters: Waiter[]
  lastUse: number
}

/** A lease not spent for this long is given back. */
export const IDLE_MS = 2000
/** A spent window is asked about again at most this often (tokens given back may have freed some). */
export const RECHECK_MS = 1000
/** While counting locally, Redis is pinged this often. */
export const PROBE_MS = 500
export const SWEEP_MS = 1000
/** Redis answering nothing for this long (and 5 × the wait) while requests wait is as good as failed. */
export const HUNG_MS = 100
/** A slow Redis is said in the log at most this often. */
export const SLOW_SAID_MS = 60_000
