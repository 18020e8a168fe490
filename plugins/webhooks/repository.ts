// Endpoints, the outbox of events and the deliveries queue, over a Kysely connection (the app's,
// the CLI's, or a lead batch's transaction). An event is announced to an endpoint by one
// delivery row: pending until a 2xx, retried on its own schedule, dead after the last attempt.
// One instance at a time delivers to an endpoint: the one holding its lease.
import { type Kysely, type Selectable, sql } from 'kysely'
import type { Dialect } from '../store/migrations.js'
import type { Database, WebhookEndpointsTable } from '../store/schema.js'
import type { NewEvent } from './events.js'

export type Endpoint = Selectable<WebhookEndpointsTable>

/** A delivery due now, with what it sends. */
export interface DueDelivery {
  event_id: string
  event_type: string
  payload: string
  event_created_at: string
  attempts: number
}

export interface EndpointStatus {
  id: string
  url: string
  disabled_at: string | null
  disabled_reason: string | null
  pending: number
  delivered: number
  dead: number
  oldest_pending: string | null
}

export interface DeadLetter {
  endpoint_id: string
  event_id: string
  event_type: string
  attempts: number
  last_outcome: string | null
  last_attempt_at: string | null
}

/** An endpoint subscribed to the event's type (types are stored space-separated). */
const subscribed = sql<boolean>`(' ' || ep.events || ' ') like ('% ' || ev.type || ' %')`

/**
 * Writes events to the outbox and one pending delivery per enabled endpoint subscribed to each.
 * Called inside the transaction of whatever the events announce.
 */
export async function writeEvents(db: Kysely<Database>, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return
  await db.insertInto('webhook_events').values(events).execute()
  await db
    .insertInto('webhook_deliveries')
    .columns(['endpoint_id', 'event_id', 'event_seq', 'status', 'next_attempt_at', 'created_at'])
    .expression(
      db
        .selectFrom('webhook_events as ev')
        .innerJoin('webhook_endpoints as ep', (join) => join.onTrue())
        .select(['ep.id', 'ev.id', 'ev.seq', sql.lit('pending').as('status'), 'ev.created_at', 'ev.created_at'])
        .where(
          'ev.id',
          'in',
          events.map((e) => e.id),
        )
        .where('ep.disabled_at', 'is', null)
        .where(subscribed),
    )
    .execute()
}

export class WebhooksRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  // --- endpoints (the CLI) ---

  async addEndpoint(
    row: Omit<Endpoint, 'lease_owner' | 'lease_until' | 'previous_secret' | 'previous_secret_until' | 'disabled_at' | 'disabled_reason'>,
  ): Promise<void> {
    await this.db.insertInto('webhook_endpoints').values(row).execute()
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
   * Sends events again, with their original ids: every event with this id or created at or after
   * `since`, to every enabled endpoint subscribed to it (or only `endpointId`). Delivered and dead
   * deliveries start over; pending ones are under way already. Returns how many were queued.
   */
  async replay(which: { eventId: string } | { since: string }, now: string, endpointId?: string): Promise<number> {
    let select = this.db
      .selectFrom('webhook_events as ev')
      .innerJoin('webhook_endpoints as ep', (join) => join.onTrue())
      .select(['ep.id', 'ev.id', 'ev.seq', sql.lit('pending').as('status'), sql.val(now).as('n'), sql.val(now).as('c')])
      .where('ep.disabled_at', 'is', null)
      .where(subscribed)
    select = 'eventId' in which ? select.where('ev.id', '=', which.eventId) : select.where('ev.created_at', '>=', which.since)
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
   * Leases up to `limit` enabled endpoints that have deliveries due and no live lease. On
   * PostgreSQL, instances racing for the same endpoint skip it instead of waiting
   * (FOR UPDATE SKIP LOCKED); the lease condition is checked again in the update itself.
   */
  async leaseEndpoints(owner: string, now: string, until: string, limit: number): Promise<Endpoint[]> {
    const free = (q: 'ep' | 'webhook_endpoints') =>
      sql<boolean>`(${sql.ref(`${q}.lease_until`)} is null or ${sql.ref(`${q}.lease_until`)} < ${now})`
    let candidates = this.db
      .selectFrom('webhook_endpoints as ep')
      .select('ep.id')
      .where('ep.disabled_at', 'is', null)
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
      .orderBy('ep.lease_until')
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

  async releaseLease(id: string, owner: string): Promise<void> {
    await this.db
      .updateTable('webhook_endpoints')
      .set({ lease_owner: null, lease_until: null })
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

  // --- status ---

  async pendingCount(): Promise<number> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  async status(): Promise<EndpointStatus[]> {
    const count = (status: string) => sql<number>`coalesce(sum(case when d.status = ${status} then 1 else 0 end), 0)`
    const rows = await this.db
      .selectFrom('webhook_endpoints as ep')
      .leftJoin('webhook_deliveries as d', 'd.endpoint_id', 'ep.id')
      .select([
        'ep.id',
        'ep.url',
        'ep.disabled_at',
        'ep.disabled_reason',
        count('pending').as('pending'),
        count('delivered').as('delivered'),
        count('dead').as('dead'),
        sql<string | null>`min(case when d.status = 'pending' then d.created_at end)`.as('oldest_pending'),
      ])
      .groupBy(['ep.id', 'ep.url', 'ep.disabled_at', 'ep.disabled_reason', 'ep.created_at'])
      .orderBy('ep.created_at')
      .execute()
    return rows.map((r) => ({ ...r, pending: Number(r.pending), delivered: Number(r.delivered), dead: Number(r.dead) }))
  }

  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries as d')
      .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
      .select(['d.endpoint_id', 'd.event_id', 'ev.type as event_type', 'd.attempts', 'd.last_outcome', 'd.last_attempt_at'])
      .where('d.status', '=', 'dead')
      .orderBy('d.event_seq')
      .limit(limit)
      .execute()
    return rows.map((r) => ({ ...r, attempts: Number(r.attempts) }))
  }
}
