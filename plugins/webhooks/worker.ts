// The delivery worker of one instance. It leases endpoints that have deliveries due (one
// instance per endpoint at a time, so an endpoint gets one request at a time, in event order),
// sends each due event signed, and records the outcome: 2xx delivered; 410 disables the endpoint;
// anything else is retried on the schedule, then kept as a dead letter. It wakes when this
// instance commits leads and polls for the rest (other instances' leads, the CLI's replays, retries).
//
// At least once: an attempt is recorded only after it is made, so a crash between the two sends
// it again (with the same webhook-id) once the lease expires.
import type { FastifyBaseLogger } from 'fastify'
import { StorageLost } from '../store/unavailable.js'
import type { DeliveryMetrics } from './metrics.js'
import type { DueDelivery, Endpoint, WebhooksRepository } from './repository.js'
import { type RetryPolicy, retryDelay } from './schedule.js'
import { type Attempted, DELIVERY_TIMEOUT_MS, Interrupted } from './sender.js'
import { signedHeaders, signingSecrets } from './signing.js'

export interface WorkerOptions {
  repo: WebhooksRepository
  /** Sends one attempt (sender.send, bound to the safety settings). */
  send: (url: string, headers: Record<string, string>, body: string, signal: AbortSignal) => Promise<Attempted>
  policy: RetryPolicy
  metrics: DeliveryMetrics
  log: FastifyBaseLogger
  /** This instance, as leases name it. */
  owner: string
  /** Endpoints delivered to at once by this instance. */
  concurrency?: number
  pollMs: number
  now?: () => Date
}

/**
 * How long a lease lasts: a few attempts. It is renewed whenever less than one attempt (10 s at
 * most) and room to record it remain, so it lapses only when its holder has died or stalled;
 * another instance then takes over (and may send the attempt in flight again: at least once).
 */
export const LEASE_MS = 20_000
const RENEW_MARGIN_MS = 5_000
const BATCH = 50

export class DeliveryWorker {
  private readonly active = new Map<string, Promise<void>>()
  private readonly abort = new AbortController()
  private poll: NodeJS.Timeout | undefined
  /** The lease query under way, if any (stop waits for it, so what it leases is released). */
  private filling: Promise<void> | undefined
  private again = false
  private stopping = false
  private readonly now: () => Date

  constructor(private readonly o: WorkerOptions) {
    this.now = o.now ?? (() => new Date())
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
          this.o.log.warn({ err: { message: err.message } }, 'webhook worker: storage unavailable; retrying at the next poll')
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
    await Promise.allSettled([...this.active.values()])
    clearTimeout(timer)
  }

  private async fill(): Promise<void> {
    const free = (this.o.concurrency ?? 4) - this.active.size
    if (free <= 0) return
    const now = this.now()
    const leased = await this.o.repo.leaseEndpoints(this.o.owner, now.toISOString(), this.leaseEnd(now), free)
    for (const endpoint of leased) {
      const run = this.drain(endpoint)
        .catch((err: Error) =>
          this.o.log.warn(
            { endpoint: endpoint.id, err: { message: err.message } },
            'webhook worker: delivery interrupted; it stays pending',
          ),
        )
        .finally(() => {
          this.active.delete(endpoint.id)
          this.wake()
        })
      this.active.set(endpoint.id, run)
    }
  }

  private leaseEnd(now: Date): string {
    return new Date(now.getTime() + LEASE_MS).toISOString()
  }

  /** Delivers what is due for one leased endpoint, in event order, then releases the lease. */
  private async drain(leased: Endpoint): Promise<void> {
    const { repo, owner } = this.o
    let endpoint: Endpoint | undefined = leased
    try {
      while (!this.stopping) {
        const due = await repo.due(leased.id, this.now().toISOString(), BATCH)
        if (due.length === 0) return
        // Renewed for each batch (which also picks up a rotated secret or a disabling), and
        // before any attempt that could outlast the lease.
        endpoint = await repo.renewLease(leased.id, owner, this.leaseEnd(this.now()))
        for (const delivery of due) {
          if (this.stopping || !endpoint) return
          if (Date.parse(endpoint.lease_until ?? '') - this.now().getTime() < DELIVERY_TIMEOUT_MS + RENEW_MARGIN_MS) {
            endpoint = await repo.renewLease(leased.id, owner, this.leaseEnd(this.now()))
            if (!endpoint) return
          }
          if (!(await this.attempt(endpoint, delivery))) return
        }
      }
    } finally {
      await repo.releaseLease(leased.id, owner).catch(() => {})
    }
  }

  /** One attempt, recorded; false when the endpoint is now disabled. */
  private async attempt(endpoint: Endpoint, delivery: DueDelivery): Promise<boolean> {
    const at = this.now()
    const headers = signedHeaders(signingSecrets(endpoint, at), delivery.event_id, at, delivery.payload)
    let result: Attempted
    try {
      result = await this.o.send(endpoint.url, headers, delivery.payload, this.abort.signal)
    } catch (err) {
      if (err instanceof Interrupted) return false // shutting down: not an attempt, still pending
      throw err
    }
    return this.record(endpoint, delivery, at, result)
  }

  private async record(endpoint: Endpoint, delivery: DueDelivery, at: Date, result: Attempted): Promise<boolean> {
    const { repo, metrics, log } = this.o
    const when = at.toISOString()
    const outcome = 'status' in result ? String(result.status) : result.error
    // Logged by ids and outcome only: never the URL, the body or anything of the lead.
    const context = { endpoint: endpoint.id, event: delivery.event_id, attempt: delivery.attempts + 1, outcome }
    if ('status' in result && result.status >= 200 && result.status < 300) {
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, outcome, { delivered: true })
      metrics.attempted('delivered')
      metrics.delivered((this.now().getTime() - Date.parse(delivery.event_created_at)) / 1000)
      return true
    }
    if ('status' in result && result.status === 410) {
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, outcome, { retryAt: when })
      await repo.setDisabled(endpoint.id, { at: when, reason: 'answered 410 Gone' })
      metrics.attempted('gone')
      log.warn(context, 'webhook endpoint answered 410 Gone: disabled; its deliveries wait (npm run webhooks -- enable)')
      return false
    }
    const delay = retryDelay(this.o.policy, delivery.attempts + 1)
    if (delay === undefined) {
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, outcome, { dead: true })
      metrics.attempted('dead')
      log.warn(context, 'webhook delivery failed for the last time: kept as a dead letter (npm run webhooks -- replay)')
    } else {
      const retryAt = new Date(at.getTime() + delay).toISOString()
      await repo.recordAttempt(endpoint.id, delivery.event_id, when, outcome, { retryAt })
      metrics.attempted('retry')
      // Debug: while a receiver is down, every pending event fails on each wave of retries (the
      // metrics count them); the last failure and a 410 are warnings.
      log.debug({ ...context, retry_at: retryAt }, 'webhook delivery failed; retrying later')
    }
    return true
  }
}
