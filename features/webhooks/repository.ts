// Endpoints, the outbox of events and the deliveries queue, over a Kysely connection (the app's,
// the CLI's, or a lead batch's transaction). An event is announced to an endpoint by one
// delivery row: pending until a 2xx, retried on its own schedule, dead after the last attempt.
// One instance at a time delivers to an endpoint: the one holding its lease. An endpoint is of a
// kind (signed HTTP, or the built-in email channel): the rows are the same, only the attempt differs.
import { type Kysely, type Selectable, sql } from 'kysely'
import type { Dialect } from '../../plugins/store/migrations.js'
import type { Database, WebhookEndpointsTable } from '../../plugins/store/schema.js'
import { LEAD_RECEIVED, type NewEvent } from './events.js'
import { subscribed } from './outbox.js'
import { type DeadLetter, deadLetters, type EndpointStatus, endpointStatus } from './reports.js'

export type Endpoint = Selectable<WebhookEndpointsTable>

/** A delivery due now, with what it sends. */
export interface DueDelivery {
  event_id: string
  event_type: string
  payload: string
  event_created_at: string
  attempts: number
}

/** Endpoints served apart: those whose last attempt went well, and those failing (or held back). */
export type Pool = 'healthy' | 'failing'

/** How an endpoint's turn ended, for its health: a delivery made, or a failure (its outcome). */
export type TurnEnd = { at: string; failure?: string; delivered: boolean }

/** The built-in endpoint of the email channel (one per deployment, kept by the server from its configuration). */
export const EMAIL_ENDPOINT_ID = 'email'

/** The email channel's recipients as its endpoint keeps them: `mailto:a@x,b@y`. */
export const mailtoUrl = (to: readonly string[]): string => `mailto:${to.join(',')}`
export const recipientsOf = (url: string): string[] =>
  url
    .replace(/^mailto:/, '')
    .split(',')
    .filter(Boolean)

export class WebhooksRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  // --- endpoints (the CLI) ---

  async addEndpoint(row: Pick<Endpoint, 'id' | 'url' | 'events' | 'secret' | 'created_at'>): Promise<void> {
    await this.db.insertInto('webhook_endpoints').values(row).execute()
  }

  /**
   * The email channel's endpoint, created or given its current recipients (the server does this
   * at start when SMTP_URL and LEAD_EMAIL_TO are set). It keeps its state otherwise: a disabled
   * one stays disabled. Its secret is never used (nothing is signed).
   */
  async keepEmailEndpoint(to: readonly string[], now: string): Promise<void> {
    const url = mailtoUrl(to)
    await this.db
      .insertInto('webhook_endpoints')
      .values({ id: EMAIL_ENDPOINT_ID, kind: 'email', url, events: LEAD_RECEIVED, secret: '', created_at: now })
      .onConflict((oc) => oc.column('id').doUpdateSet({ url, kind: 'email' }))
      .execute()
  }

  listEndpoints(): Promise<Endpoint[]> {
    return this.db.selectFrom('webhook_endpoints').selectAll().orderBy('created_at').orderBy('id').execute()
  }

  findEndpoint(id: string): Promise<Endpoint | undefined> {
    return this.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst()
  }

  /** Removes the endpoint and its deliveries (delivered, pending and dead). */
  async removeEndpoint(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute()
      const res = await trx.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst()
      return Number(res.numDeletedRows) > 0
    })
  }

  /** The new secret signs from now on; the current one keeps signing until `previousUntil`. */
  async rotateSecret(id: string, secret: string, previousUntil: string): Promise<boolean> {
    const res = await this.db
      .updateTable('webhook_endpoints')
      .set((eb) => ({ previous_secret: eb.ref('secret'), previous_secret_until: previousUntil, secret }))
      .where('id', '=', id)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  /** Disables (a reason and a time) or enables (null) the endpoint; its pending deliveries wait meanwhile. */
  async setDisabled(id: string, disabled: { at: string; reason: string } | null): Promise<boolean> {
    const res = await this.db
      .updateTable('webhook_endpoints')
      .set({ disabled_at: disabled?.at ?? null, disabled_reason: disabled?.reason ?? null })
      .where('id', '=', id)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  // --- events outside a lead's transaction (test events) ---

  /** Stores an event and one pending delivery of it to the given endpoint, whatever it subscribes to. */
  async addEventFor(endpointId: string, event: NewEvent): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const { seq } = await trx.insertInto('webhook_events').values(event).returning('seq').executeTakeFirstOrThrow()
      await trx
        .insertInto('webhook_deliveries')
        .values({
          endpoint_id: endpointId,
          event_id: event.id,
          event_seq: Number(seq),
          status: 'pending',
          next_attempt_at: event.created_at,
          created_at: event.created_at,
        })
        .execute()
    })
  }

  /**
   * Sends events again, with their original ids: the event with this id, every event created at or
   * after `since`, or every dead letter, to every enabled endpoint subscribed to it (or only
   * `endpointId`). Delivered and dead deliveries start over; pending ones are under way already.
   * Returns how many were queued.
   */
  async replay(which: { eventId: string } | { since: string } | { dead: true }, now: string, endpointId?: string): Promise<number> {
    let select = this.db
      .selectFrom('webhook_events as ev')
      .innerJoin('webhook_endpoints as ep', (join) => join.onTrue())
      .select(['ep.id', 'ev.id', 'ev.seq', sql.lit('pending').as('status'), sql.val(now).as('n'), sql.val(now).as('c')])
      .where('ep.disabled_at', 'is', null)
      .where(subscribed)
    if ('eventId' in which) select = select.where('ev.id', '=', which.eventId)
    else if ('since' in which) select = select.where('ev.created_at', '>=', which.since)
    else
      select = select.where(({ exists, selectFrom }) =>
        exists(
          selectFrom('webhook_deliveries as dd')
            .select('dd.event_id')
            .whereRef('dd.event_id', '=', 'ev.id')
            .whereRef('dd.endpoint_id', '=', 'ep.id')
            .where('dd.status', '=', 'dead'),
        ),
      )
    if (endpointId) select = select.where('ep.id', '=', endpointId)
    const rows = await this.db
      .insertInto('webhook_deliveries')
      .columns(['endpoint_id', 'event_id', 'event_seq', 'status', 'next_attempt_at', 'created_at'])
      .expression(select)
      .onConflict((oc) =>
        oc
          .columns(['endpoint_id', 'event_id'])
          .doUpdateSet({ status: 'pending', attempts: 0, next_attempt_at: now, created_at: now })
          .where('webhook_deliveries.status', '<>', 'pending'),
      )
      .returning('event_id')
      .execute()
    return rows.length
  }

  /** Where one event stands with one endpoint. */
  delivery(endpointId: string, eventId: string) {
    return this.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'attempts', 'last_outcome', 'last_attempt_at'])
      .where('endpoint_id', '=', endpointId)
      .where('event_id', '=', eventId)
      .executeTakeFirst()
  }

  /** The ids of the events about a lead (webhook_events.lead_id), oldest first. */
  async eventsOfLead(leadId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('webhook_events').select('id').where('lead_id', '=', leadId).orderBy('seq').execute()
    return rows.map((r) => r.id)
  }

  eventExists(id: string): Promise<boolean> {
    return this.db
      .selectFrom('webhook_events')
      .select('id')
      .where('id', '=', id)
      .executeTakeFirst()
      .then((row) => row !== undefined)
  }

  // --- the worker ---

  /**
   * Leases up to `limit` enabled endpoints of the pool that have deliveries due and no live lease,
   * the least recently served first (so turns go round). On PostgreSQL, instances racing for the
   * same endpoint skip it instead of waiting (FOR UPDATE SKIP LOCKED); the lease condition is
   * checked again in the update itself.
   */
  async leaseEndpoints(owner: string, now: string, until: string, pool: Pool, limit: number): Promise<Endpoint[]> {
    if (limit <= 0) return []
    const free = (q: 'ep' | 'webhook_endpoints') =>
      sql<boolean>`(${sql.ref(`${q}.lease_until`)} is null or ${sql.ref(`${q}.lease_until`)} < ${now})`
    let candidates = this.db
      .selectFrom('webhook_endpoints as ep')
      .select('ep.id')
      .where('ep.disabled_at', 'is', null)
      .where('ep.failing_since', pool === 'healthy' ? 'is' : 'is not', null)
      .where(free('ep'))
      .where(({ exists, selectFrom }) =>
        exists(
          selectFrom('webhook_deliveries as d')
            .select('d.event_id')
            .whereRef('d.endpoint_id', '=', 'ep.id')
            .where('d.status', '=', 'pending')
            .where('d.next_attempt_at', '<=', now),
        ),
      )
      // Never served sorts first on both backends (NULLs sort first on SQLite, last on PostgreSQL).
      .orderBy(sql`coalesce(ep.served_at, '')`)
      .orderBy('ep.id')
      .limit(limit)
    if (this.dialect === 'postgres') candidates = candidates.forUpdate().skipLocked()
    return this.db
      .updateTable('webhook_endpoints')
      .set({ lease_owner: owner, lease_until: until })
      .where('id', 'in', candidates)
      .where(free('webhook_endpoints'))
      .returningAll()
      .execute()
  }

  /** Extends the lease if this owner still holds it and the endpoint is enabled; the endpoint as it is now. */
  renewLease(id: string, owner: string, until: string): Promise<Endpoint | undefined> {
    return this.db
      .updateTable('webhook_endpoints')
      .set({ lease_until: until })
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .where('disabled_at', 'is', null)
      .returningAll()
      .executeTakeFirst()
  }

  /**
   * Ends this owner's turn: the lease released, the endpoint's health updated from how the turn
   * ended (a failure marks it failing, a delivery without failure clears that), and when.
   */
  async releaseLease(id: string, owner: string, end?: TurnEnd): Promise<void> {
    await this.db
      .updateTable('webhook_endpoints')
      .set((eb) => ({
        lease_owner: null,
        lease_until: null,
        ...(end && { served_at: end.at }),
        ...(end?.failure !== undefined && {
          failing_since: eb.fn.coalesce('failing_since', sql.val(end.at)),
          last_failure: end.failure,
          last_failure_at: end.at,
        }),
        ...(end?.failure === undefined && end?.delivered && { failing_since: null }),
      }))
      .where('id', '=', id)
      .where('lease_owner', '=', owner)
      .execute()
  }

  /** The endpoint's deliveries due at `now`, in event order. */
  async due(endpointId: string, now: string, limit: number): Promise<DueDelivery[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
      .select(['d.event_id', 'ev.type as event_type', 'ev.payload', 'ev.created_at as event_created_at', 'd.attempts'])
      .where('d.endpoint_id', '=', endpointId)
      .where('d.status', '=', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .orderBy('d.event_seq')
      .limit(limit)
      .execute()
    return rows.map((r) => ({ ...r, attempts: Number(r.attempts) }))
  }

  /**
   * Records an attempt: delivered, failed with a next attempt at `retryAt`, or failed for the
   * last time (dead). A pending attempt of a disabled endpoint keeps waiting (`retryAt` now).
   */
  async recordAttempt(
    endpointId: string,
    eventId: string,
    at: string,
    outcome: string,
    result: { delivered: true } | { retryAt: string } | { dead: true },
  ): Promise<void> {
    const status = 'delivered' in result ? 'delivered' : 'dead' in result ? 'dead' : 'pending'
    await this.db
      .updateTable('webhook_deliveries')
      .set((eb) => ({
        status,
        attempts: eb('attempts', '+', 1),
        last_attempt_at: at,
        last_outcome: outcome,
        ...('delivered' in result && { delivered_at: at }),
        ...('retryAt' in result && { next_attempt_at: result.retryAt }),
      }))
      .where('endpoint_id', '=', endpointId)
      .where('event_id', '=', eventId)
      .where('status', '=', 'pending')
      .execute()
  }

  /**
   * Holds back the endpoint's due deliveries (this server's configuration does not let them go):
   * each says why in its outcome and is looked at again at `retryAt`; no attempt is counted.
   */
  async holdDue(endpointId: string, now: string, outcome: string, retryAt: string): Promise<number> {
    const res = await this.db
      .updateTable('webhook_deliveries')
      .set({ last_outcome: outcome, next_attempt_at: retryAt })
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .executeTakeFirst()
    return Number(res.numUpdatedRows)
  }

  // --- retention ---

  /**
   * Deletes up to `limit` events, with their deliveries, that no endpoint needs any more: created
   * before `cutoff`, with no pending delivery and no attempt since `cutoff` (a delivered event, a
   * dead letter, an event nobody subscribed to). A pending delivery is never touched, however old.
   * Returns how many were deleted.
   */
  async sweepEvents(cutoff: string, limit: number): Promise<number> {
    const stale = this.db
      .selectFrom('webhook_events as ev')
      .select('ev.id')
      .where('ev.created_at', '<', cutoff)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_deliveries as d')
              .select('d.event_id')
              .whereRef('d.event_id', '=', 'ev.id')
              .where((eb) =>
                eb.or([eb('d.status', '=', 'pending'), eb('d.created_at', '>=', cutoff), eb('d.last_attempt_at', '>=', cutoff)]),
              ),
          ),
        ),
      )
      .orderBy('ev.seq')
      .limit(limit)
    const res = await this.db.deleteFrom('webhook_events').where('id', 'in', stale).executeTakeFirst()
    return Number(res.numDeletedRows)
  }

  // --- status ---

  async pendingCount(): Promise<number> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  /** Each endpoint with its counts, for `status` (reports.ts). */
  status(): Promise<EndpointStatus[]> {
    return endpointStatus(this.db)
  }

  /** Dead letters, oldest event first (of one endpoint when named): reports.ts. */
  deadLetters(limit: number, endpointId?: string): Promise<DeadLetter[]> {
    return deadLetters(this.db, limit, endpointId)
  }
}
