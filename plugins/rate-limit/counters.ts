// Rate-limit counting that costs less than a Redis round trip per request: leases of tokens from
// Redis spent locally, credit while a lease is on its way, local counting while Redis is in
// trouble. The design, its bounds and the state it keeps are leases.ts's (and docs/scaling-out.md).
import {
  type CountersOptions,
  type Entry,
  HUNG_MS,
  IDLE_MS,
  PROBE_MS,
  RECHECK_MS,
  type Remote,
  SLOW_SAID_MS,
  SWEEP_MS,
  type Verdict,
  type Waiter,
} from './leases.js'

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
