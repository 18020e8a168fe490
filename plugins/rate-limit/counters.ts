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

interface Waiter {
  resolve(v: Verdict): void
  timer: NodeJS.Timeout
  since: number
}

interface Entry {
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
const SWEEP_MS = 1000
/** Redis answering nothing for this long (and 5 × the wait) while requests wait is as good as failed. */
const HUNG_MS = 100
/** A slow Redis is said in the log at most this often. */
const SLOW_SAID_MS = 60_000

export class Counters {
  private readonly entries = new Map<string, Entry>()
  private readonly waiting = new Set<Entry>()
  private readonly remote: Remote | undefined
  private readonly now: () => number
  private readonly maxEntries: number
  private readonly hungMs: number
  /** Counting in Redis (true) or in this instance's memory. */
  private shared: boolean
  private probing = false
  /** When the first TAKE sent since Redis last answered one was sent (undefined: none waiting). */
  private quietSince: number | undefined
  private slowSaid = Number.NEGATIVE_INFINITY
  private readonly sweeper: NodeJS.Timeout
  private prober: NodeJS.Timeout | undefined
  private closed = false
  private windows = 0

  constructor(private readonly options: CountersOptions) {
    this.remote = options.remote
    this.shared = options.remote !== undefined
    this.now = options.now ?? Date.now
    this.maxEntries = options.maxEntries ?? 100_000
    this.hungMs = options.hungMs ?? Math.max(HUNG_MS, 5 * options.waitMs)
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS).unref()
  }

  /**
   * Counts one request of `caller` against a budget. Synchronous unless the instance has neither
   * a token nor credit left for the pair, in which case it waits for Redis (at most waitMs).
   */
  spend(budget: string, caller: string, max: number, windowMs: number, share: number): Verdict | Promise<Verdict> {
    const now = this.now()
    const e = this.entry(budget, caller, max, windowMs, share, now)
    e.lastUse = now
    if (e.tokens > 0) {
      e.tokens--
      // Half the lease spent: the next one is asked for in the background.
      if (e.share > 0 && e.tokens <= Math.floor(e.share / 2) && e.inFlight === 0 && this.shared) this.fetch(e, e.share)
      return this.allowed(e, now)
    }
    if (e.overUntil > now) return this.refused(e, now)
    if (!this.shared) return this.local(e, now)
    if (e.debt < e.share && this.seen(e) < e.max) {
      e.debt++
      if (e.inFlight === 0) this.fetch(e, e.share)
      return this.allowed(e, now)
    }
    return new Promise<Verdict>((resolve) => {
      // The timer's turn of the event loop may come before the turn that reads Redis' answer, when
      // the process was busy (a long GC, a loaded machine): the check waits for that read first.
      const waiter: Waiter = {
        resolve,
        timer: setTimeout(() => setImmediate(() => this.tooSlow(e, waiter)), this.options.waitMs),
        since: now,
      }
      e.waiters.push(waiter)
      this.waiting.add(e)
      // Its own TAKE, not the next turn of one already on its way: concurrent requests of a pair
      // (a security budget's) each wait one round trip, pipelined.
      this.fetch(e, e.inFlight === 0 ? e.share : 0)
    })
  }

  /**
   * Redis has not answered a waiting request within waitMs: that request is counted locally, from
   * what this instance knows (and charged to Redis later), as during an outage. Slowness alone
   * does not stop the other requests from asking Redis: a call that fails (ioredis gives up on a
   * command after 500 ms) does, and then every pair counts locally; so does Redis answering
   * nothing at all for 100 ms (5 × the wait) while requests wait for it.
   */
  private tooSlow(e: Entry, waiter: Waiter): void {
    const at = e.waiters.indexOf(waiter)
    if (at < 0) return
    e.waiters.splice(at, 1)
    if (e.waiters.length === 0) this.waiting.delete(e)
    const now = this.now()
    this.options.onWait?.(false, now - waiter.since)
    // Not slow but silent (frozen, or the network gone without a word): as good as failed.
    if (this.quietSince !== undefined && now - this.quietSince >= this.hungMs) {
      this.toLocal(`Redis has answered nothing for ${now - this.quietSince} ms`)
    } else if (now - this.slowSaid >= SLOW_SAID_MS) {
      this.slowSaid = now
      this.options.onSlow?.(this.options.waitMs)
    }
    waiter.resolve(this.servedLocally(e, now))
  }

  /**
   * A waiting request (already taken off the queue) counted locally. If a TAKE on its way asked a
   * token for it, that token now pays its debt (see `owed`).
   */
  private servedLocally(e: Entry, now: number): Verdict {
    const v = this.local(e, now)
    // (Counted in this pair's window: not in a successor, which `local` uses when this one is over or dropped.)
    if (v.allowed && v.window === e.window && e.asked - e.owed > e.waiters.length) e.owed++
    return v
  }

  /** The pair's count as this instance knows it, without counting (no Redis call). */
  peek(budget: string, caller: string, windowMs: number): { current: number; ttl: number } {
    const e = this.entries.get(`${budget} ${caller}`)
    const now = this.now()
    if (!e || e.windowMs !== windowMs || now >= e.end) return { current: 0, ttl: 0 }
    return { current: Math.max(0, this.seen(e)), ttl: e.end - now }
  }

  /**
   * Gives back one request counted by `spend` in window `window` (it turned out not to be what the
   * budget counts, e.g. a client authentication that succeeded). The token stays with this
   * instance, for its next request, and goes back to Redis when unused.
   */
  refund(budget: string, caller: string, window: number): void {
    const e = this.entries.get(`${budget} ${caller}`)
    if (!e || e.window !== window) return
    // Not yet charged to Redis: uncounted (and no longer one of those let through on this
    // instance's own, if it was). Otherwise a token counted there that nobody spent.
    if (e.debt > e.charging) {
      e.debt--
      if (e.localAllowed > 0) e.localAllowed--
    } else e.tokens++
  }

  /** Stops the timers; gives unspent tokens back and charges what was counted locally (bounded). */
  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.sweeper)
    if (this.prober) clearInterval(this.prober)
    const now = this.now()
    for (const e of this.waiting) this.settleLocally(e, now)
    this.waiting.clear()
    if (!this.remote || !this.shared) return
    const remote = this.remote
    const calls: Promise<unknown>[] = []
    for (const e of this.entries.values()) {
      if (now >= e.end) continue
      const uncharged = e.debt - e.charging
      if (uncharged > 0) calls.push(remote.take(e.key, e.max, 0, 0, uncharged, e.windowMs, e.redisStart))
      if (e.tokens > 0 && e.redisStart !== 0) calls.push(remote.give(e.key, e.tokens, e.redisStart))
    }
    if (calls.length === 0) return
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      Promise.allSettled(calls),
      new Promise((r) => {
        timer = setTimeout(r, 250)
      }),
    ])
    clearTimeout(timer)
  }

  private entry(budget: string, caller: string, max: number, windowMs: number, share: number, now: number): Entry {
    const id = `${budget} ${caller}`
    const old = this.entries.get(id)
    if (old && now < old.end && old.max === max && old.windowMs === windowMs) return old
    const e: Entry = {
      id,
      budget,
      caller,
      windowMs,
      window: ++this.windows,
      end: now + windowMs,
      redisStart: 0,
      key: `${this.options.prefix}${budget}:${caller}`,
      max,
      share,
      tokens: 0,
      debt: 0,
      charging: 0,
      asked: 0,
      owed: 0,
      used: 0,
      overUntil: 0,
      localBase: undefined,
      localAllowed: 0,
      inFlight: 0,
      waiters: [],
      lastUse: now,
    }
    // Re-inserted, so the map's order is creation order and the oldest pair is dropped first.
    this.entries.delete(id)
    this.entries.set(id, e)
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) {
        const dropped = this.entries.get(oldest)
        this.entries.delete(oldest)
        if (dropped) this.flush(dropped, now)
      }
    }
    return e
  }

  /** Requests of the window as this instance knows them. */
  private seen(e: Entry): number {
    return e.used - e.tokens + e.debt
  }

  private allowed(e: Entry, now: number): Verdict {
    return { allowed: true, current: Math.min(e.max, Math.max(1, this.seen(e))), ttl: e.end - now, window: e.window }
  }

  private refused(e: Entry, now: number): Verdict {
    return { allowed: false, current: e.max + 1, ttl: e.end - now, window: e.window }
  }

  /**
   * Counting on this instance's own: at most a budget's worth per window, less what it had seen
   * counted when it began (counts that arrive from Redis later do not raise that allowance again),
   * so N instances counting alone let through at most N budgets more.
   */
  private local(pair: Entry, now: number): Verdict {
    // A pair whose window ended (or that was dropped) while its requests waited counts in its successor.
    const e =
      now >= pair.end || this.entries.get(pair.id) !== pair
        ? this.entry(pair.budget, pair.caller, pair.max, pair.windowMs, pair.share, now)
        : pair
    if (e.overUntil > now) return this.refused(e, now)
    e.localBase ??= this.seen(e)
    if (e.localBase + e.localAllowed >= e.max) return this.refused(e, now)
    e.localAllowed++
    e.debt++
    return this.allowed(e, now)
  }

  /**
   * Asks Redis for tokens for the waiting requests no TAKE on its way asks for yet, plus `extra`,
   * charging the debt no TAKE on its way charges yet.
   */
  private fetch(e: Entry, extra: number): void {
    const remote = this.remote
    if (!remote || this.closed) return
    const need = Math.max(0, e.waiters.length - (e.asked - e.owed))
    // Not the debt the tokens on their way will pay (`owed`).
    const charge = Math.max(0, e.debt - e.charging - e.owed)
    e.inFlight++
    e.asked += need
    e.charging += charge
    this.quietSince ??= this.now()
    this.options.onCall?.('take')
    remote.take(e.key, e.max, need, extra, charge, e.windowMs, e.redisStart).then(
      ([granted, used, start, redisNow]) => this.landed(e, need, charge, Number(granted), Number(used), Number(start), Number(redisNow)),
      (err: Error) => {
        e.inFlight--
        e.asked -= need
        // The debt those tokens were to pay is charged by a later TAKE.
        e.owed -= Math.min(e.owed, need)
        e.charging -= charge
        this.toLocal(`Redis refused a count: ${err.message}`)
      },
    )
  }

  private landed(e: Entry, need: number, charge: number, granted: number, used: number, start: number, redisNow: number): void {
    this.quietSince = undefined
    e.inFlight--
    e.asked -= need
    // The tokens asked for requests let through meanwhile (the first asked: Redis answers in
    // order, and waits run out in order) pay their debt below (settled first); what Redis did not
    // grant of them stays debt, charged by the next TAKE.
    e.owed -= Math.min(e.owed, need)
    e.charging -= charge
    e.debt -= charge
    if (e.redisStart !== 0 && start !== e.redisStart) {
      // Redis' window for the pair is a new one: what this instance held or owed was the old one's
      // (Redis dropped the charges made for it). The TAKEs still on their way charge nothing.
      e.window = ++this.windows
      e.tokens = 0
      e.debt = e.charging
      e.owed = 0
      e.overUntil = 0
      e.localBase = undefined
      e.localAllowed = 0
    }
    // The window as Redis has it, on this instance's clock.
    e.redisStart = start
    e.end = this.now() + (start + e.windowMs - redisNow)
    e.used = used
    e.tokens += granted
    // Requests let through meanwhile without a token (on credit, or locally after a wait timed
    // out) spend the new tokens first; not the debt another TAKE on its way is already charging.
    const settled = Math.max(0, Math.min(e.debt - e.charging, e.tokens))
    e.debt -= settled
    e.tokens -= settled
    const now = this.now()
    while (e.waiters.length > 0 && e.tokens > 0) {
      e.tokens--
      this.answer(e.waiters.shift(), this.allowed(e, now), true)
    }
    if (e.tokens === 0 && e.used >= e.max) e.overUntil = Math.min(e.end, now + RECHECK_MS)
    if (e.waiters.length === 0) {
      this.waiting.delete(e)
      return
    }
    if (e.overUntil > now) {
      for (const w of e.waiters.splice(0)) this.answer(w, this.refused(e, now), true)
      this.waiting.delete(e)
    } else if (!this.shared || now >= e.end || this.entries.get(e.id) !== e) {
      this.settleLocally(e, now)
      this.waiting.delete(e)
    } else if (e.waiters.length > e.asked) {
      // Waiting requests no TAKE on its way asks for (this one was short: tokens were given back meanwhile).
      this.fetch(e, 0)
    }
  }

  private answer(w: Waiter | undefined, v: Verdict, fromRedis: boolean): void {
    if (!w) return
    clearTimeout(w.timer)
    if (fromRedis) this.options.onWait?.(true, this.now() - w.since)
    w.resolve(v)
  }

  /** Answers the pair's waiting requests from local counts. */
  private settleLocally(e: Entry, now: number): void {
    for (const w of e.waiters.splice(0)) this.answer(w, this.servedLocally(e, now), false)
  }

  /** Redis failed (or is not there yet): count locally until it answers a ping. */
  toLocal(reason: string): void {
    const now = this.now()
    for (const e of this.waiting) this.settleLocally(e, now)
    this.waiting.clear()
    if (!this.shared || this.closed) return
    this.shared = false
    this.quietSince = undefined
    this.options.onLocal?.(reason)
    this.prober = setInterval(() => this.probe(), PROBE_MS).unref()
  }

  private probe(): void {
    const remote = this.remote
    if (!remote || this.probing || this.shared) return
    this.probing = true
    this.options.onCall?.('ping')
    remote.ping().then(
      () => {
        this.probing = false
        if (this.shared || this.closed) return
        this.shared = true
        if (this.prober) clearInterval(this.prober)
        this.prober = undefined
        this.options.onShared?.()
        this.sweep()
      },
      () => {
        this.probing = false
      },
    )
  }

  /** Charges a pair's debt and gives its unspent tokens back (a pair dropped from memory). */
  private flush(e: Entry, now: number): void {
    if (!this.remote || !this.shared || now >= e.end || e.inFlight > 0) return
    if (e.debt > 0) this.fetch(e, 0)
    if (e.tokens > 0) this.giveBack(e)
  }

  private giveBack(e: Entry): void {
    const remote = this.remote
    // Tokens are Redis' only once Redis has said which window they are of.
    if (!remote || e.redisStart === 0) return
    const n = e.tokens
    e.tokens = 0
    e.used -= n
    this.options.onCall?.('give')
    remote.give(e.key, n, e.redisStart).catch(() => {})
  }

  /** Forgets finished windows; charges debts and gives idle leases back while Redis is there. */
  private sweep(): void {
    const now = this.now()
    for (const [id, e] of this.entries) {
      if (now >= e.end) {
        if (e.inFlight === 0 && e.waiters.length === 0) this.entries.delete(id)
        continue
      }
      if (!this.shared || e.inFlight > 0) continue
      if (e.debt > 0) this.fetch(e, 0)
      else if (e.tokens > 0 && now - e.lastUse >= IDLE_MS) this.giveBack(e)
    }
  }
}
