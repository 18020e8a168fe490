// The delivery worker of one instance, for every channel (signed HTTP, email). It leases
// endpoints that have deliveries due (one instance per endpoint at a time, so an endpoint gets one
// attempt at a time, in event order), has the endpoint's channel make each attempt, and records
// the outcome: delivered; 410 disables the endpoint; a failure is retried on the schedule, then
// kept as a dead letter (at once when the receiver refused for good); a delivery this server's
// configuration holds back says why and is looked at again later. It wakes when this instance
// commits leads and polls for the rest (other instances' leads, the CLI's replays, retries).
//
// Fair between endpoints: an endpoint is served in turns (at most one batch, and a failure ends
// the turn), the least recently served first; endpoints whose last turn failed are served in a
// pool of their own, and a turn whose attempt has waited a second for its answer moves there, so
// dead or slow receivers never take the slots of healthy ones (WEBHOOKS_CONCURRENCY each).
//
// At least once: an attempt is recorded only after it is made, so a crash between the two sends
// it again (with the same id) once the lease expires.
import type { FastifyBaseLogger } from 'fastify'
import { StorageLost } from '../../plugins/store/unavailable.js'
import { type Attempted, type Channel, held, Interrupted } from './channel.js'
import type { DeliveryMetrics } from './metrics.js'
import type { DueDelivery, Endpoint, Pool, TurnEnd, WebhooksRepository } from './repository.js'
import { type RetryPolicy, retryDelay } from './schedule.js'

export interface WorkerOptions {
  repo: WebhooksRepository
  /** The channel of each endpoint kind. */
  channels: ReadonlyMap<string, Channel>
  policy: RetryPolicy
  metrics: DeliveryMetrics
  log: FastifyBaseLogger
  /** This instance, as leases name it. */
  owner: string
  /** Endpoints served at once in each pool (healthy, failing or slow) by this instance. */
  concurrency: number
  /** An attempt's time limit (the channels enforce it); leases outlast it. */
  timeoutMs: number
  pollMs: number
  now?: () => Date
}

/**
 * How long a lease lasts at least: a few attempts. It is renewed whenever less than one attempt
 * and room to record it remain, so it lapses only when its holder has died or stalled; another
 * instance then takes over (and may send the attempt in flight again: at least once).
 */
export const LEASE_MS = 20_000
const RENEW_MARGIN_MS = 5_000
/** Deliveries in one turn of an endpoint, at most. */
const BATCH = 50
/** An attempt still waiting for its answer after this is slow: its turn moves to the failing pool. */
export const SLOW_MS = 1_000

interface Turn {
  pool: Pool
  done: Promise<void>
}

export class DeliveryWorker {
  private readonly turns = new Map<string, Turn>()
  private readonly abort = new AbortController()
  private poll: NodeJS.Timeout | undefined
  /** The lease query under way, if any (stop waits for it, so what it leases is released). */
  private filling: Promise<void> | undefined
  private again = false
  private stopping = false
  private readonly now: () => Date
  private readonly leaseMs: number

  constructor(private readonly o: WorkerOptions) {
    this.now = o.now ?? (() => new Date())
    this.leaseMs = Math.max(LEASE_MS, o.timeoutMs + 2 * RENEW_MARGIN_MS)
  }

  start(): void {
    this.poll = setInterval(() => this.wake(), this.o.pollMs)
    this.poll.unref()
    this.wake()
  }

  /** Looks for due deliveries now (after a commit of this instance, and at every poll). */
  wake(): void {
    if (this.stopping) return
    if (this.filling) {
      this.again = true
      return
    }
    this.filling = this.fill()
      .catch((err: Error) => {
        // A lost database file is said once, by the store; every poll would repeat it.
        if (!(err instanceof StorageLost)) {
          this.o.log.warn({ err: { message: err.message } }, 'delivery worker: storage unavailable; retrying at the next poll')
        }
      })
      .finally(() => {
        this.filling = undefined
        if (this.again) {
          this.again = false
          this.wake()
        }
      })
  }

  /**
   * Stops leasing; attempts in flight get `graceMs` to finish and be recorded, then are cut
   * short and left pending (recorded as not made). Leases are released for other instances.
   */
  async stop(graceMs = 5000): Promise<void> {
    this.stopping = true
    clearInterval(this.poll)
    const timer = setTimeout(() => this.abort.abort(), graceMs)
    await this.filling
    await Promise.allSettled([...this.turns.values()].map((turn) => turn.done))
    clearTimeout(timer)
    await Promise.allSettled([...this.o.channels.values()].map((channel) => channel.close?.()))
  }

  private free(pool: Pool): number {
    let used = 0
    for (const turn of this.turns.values()) if (turn.pool === pool) used++
    return this.o.concurrency - used
  }

  private async fill(): Promise<void> {
    const now = this.now()
    for (const pool of ['healthy', 'failing'] as const) {
      const free = this.free(pool)
      if (free <= 0 || this.stopping) continue
      const leased = await this.o.repo.leaseEndpoints(this.o.owner, now.toISOString(), this.leaseEnd(now), pool, free)
      for (const endpoint of leased) this.begin(endpoint, pool)
    }
  }

  private begin(endpoint: Endpoint, pool: Pool): void {
    const turn: Turn = { pool, done: Promise.resolve() }
    turn.done = this.serve(endpoint, turn)
      .catch((err: Error) =>
        this.o.log.warn(
          { endpoint: endpoint.id, channel: endpoint.kind, err: { message: err.message } },
          'delivery interrupted; it stays pending',
        ),
      )
      .finally(() => {
        this.turns.delete(endpoint.id)
        this.wake()
      })
    this.turns.set(endpoint.id, turn)
  }

  private leaseEnd(now: Date): string {
    return new Date(now.getTime() + this.leaseMs).toISOString()
  }

  /**
   * One turn of a leased endpoint: what is due, in event order, at most one batch, until an
   * attempt fails; then the lease is released with the endpoint's health.
   */
  private async serve(leased: Endpoint, turn: Turn): Promise<void> {
    const { repo, owner } = this.o
    let end: TurnEnd | undefined
    try {
      const due = await repo.due(leased.id, this.now().toISOString(), BATCH)
      // Renewed before the first attempt (which also picks up a rotated secret or a disabling),
      // and before any attempt that could outlast the lease.
      let endpoint = due.length > 0 ? await repo.renewLease(leased.id, owner, this.leaseEnd(this.now())) : undefined
      let delivered = false
      for (const delivery of due) {
        if (this.stopping || !endpoint) break
        if (Date.parse(endpoint.lease_until ?? '') - this.now().getTime() < this.o.timeoutMs + RENEW_MARGIN_MS) {
          endpoint = await repo.renewLease(leased.id, owner, this.leaseEnd(this.now()))
          if (!endpoint) break
        }
        const outcome = await this.attempt(endpoint, delivery, turn)
        if (outcome === undefined) break // interrupted by shutdown: not an attempt
        const at = this.now().toISOString()
        if ('delivered' in outcome) {
          delivered = true
          end = { at, delivered }
          continue
        }
        end = { at, delivered, failure: 'gone' in outcome ? outcome.gone : 'held' in outcome ? outcome.held : outcome.failed }
        break
      }
    } finally {
      await repo.releaseLease(leased.id, owner, end ?? { at: this.now().toISOString(), delivered: false }).catch(() => {})
    }
  }

  /** One attempt, recorded; undefined when shutdown cut it short. */
  private async attempt(endpoint: Endpoint, delivery: DueDelivery, turn: Turn): Promise<Attempted | undefined> {
    const channel = this.o.channels.get(endpoint.kind)
    // Slow to answer: this turn now counts among the failing ones, and frees a healthy slot.
    const slow =
      turn.pool === 'healthy'
        ? setTimeout(() => {
            turn.pool = 'failing'
            this.wake()
          }, SLOW_MS)
        : undefined
    const at = this.now()
    let result: Attempted
    try {
      result = channel ? await channel.deliver(endpoint, delivery, this.abort.signal) : held(`no ${endpoint.kind} channel on this server`)
    } catch (err) {
      if (err instanceof Interrupted) return undefined
      throw err
    } finally {
      clearTimeout(slow)
    }
    await this.record(endpoint, delivery, at, result)
    return result
  }

  private async record(endpoint: Endpoint, delivery: DueDelivery, at: Date, result: Attempted): Promise<void> {
    const { repo, metrics, log } = this.o
    const when = at.toISOString()
    // Logged by ids and outcome only: never the URL, the recipients, the body or anything of the lead.
    const context = { endpoint: endpoint.id, channel: endpoint.kind, event: delivery.event_id, attempt: delivery.attempts + 1 }
    if ('delivered' in result) {
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, result.delivered, { delivered: true })
      metrics.attempted('delivered')
      metrics.delivered((this.now().getTime() - Date.parse(delivery.event_created_at)) / 1000)
      return
    }
    if ('held' in result) {
      // Not an attempt: every due delivery of the endpoint says why, and is looked at again later.
      const retryAt = new Date(at.getTime() + this.o.policy.firstRetryMs).toISOString()
      const count = await repo.holdDue(endpoint.id, when, result.held, retryAt)
      // Said once, when it starts (or its reason changes), not at every look.
      if (endpoint.last_failure !== result.held) {
        log.warn(
          { endpoint: endpoint.id, channel: endpoint.kind, reason: result.held, deliveries: count },
          'deliveries held back by this server’s configuration',
        )
      }
      return
    }
    if ('gone' in result) {
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, result.gone, { retryAt: when })
      await repo.setDisabled(endpoint.id, { at: when, reason: 'answered 410 Gone' })
      metrics.attempted('gone')
      log.warn(
        { ...context, reason: result.gone },
        'endpoint answered 410 Gone: disabled; its deliveries wait (npm run webhooks -- enable)',
      )
      return
    }
    const delay = result.permanent ? undefined : retryDelay(this.o.policy, delivery.attempts + 1)
    if (delay === undefined) {
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, result.failed, { dead: true })
      metrics.attempted('dead')
      const resend = endpoint.kind === 'email' ? 'npm run email -- resend' : 'npm run webhooks -- replay'
      log.warn(
        { ...context, reason: result.failed, permanent: result.permanent === true },
        `delivery failed for the last time: kept as a dead letter (${resend})`,
      )
    } else {
      const retryAt = new Date(at.getTime() + delay).toISOString()
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, result.failed, { retryAt })
      metrics.attempted('retry')
      log.info({ ...context, reason: result.failed, next_attempt_at: retryAt }, 'delivery failed; retrying later')
    }
  }
}
