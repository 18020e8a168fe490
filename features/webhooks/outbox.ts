// The outbox's writes and reads that go with other features' transactions: events and their
// deliveries written in the transaction of what they announce (a batch of leads, an erasure),
// a lead's events deleted with it, and a lead's deliveries as an access request shows them.
import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Store } from '../../plugins/store/open.js'
import type { Database } from '../../plugins/store/schema.js'
import type { NewEvent } from './events.js'

/** An endpoint subscribed to the event's type (types are stored space-separated). */
export const subscribed = sql<boolean>`(' ' || ep.events || ' ') like ('% ' || ev.type || ' %')`

/**
 * The statements that write events to the outbox and one pending delivery per enabled endpoint
 * subscribed to each, with values as the store carries them (store/batch.ts): for a batch of
 * leads (`aboutStoredLeads`: only the events whose lead the transaction stored, see LeadListener),
 * or run one by one by writeEvents. The last statement's row count is the deliveries created.
 */
export function eventStatements(
  store: Pick<Store, 'dialect' | 'values'>,
  events: readonly NewEvent[],
  aboutStoredLeads = false,
): RawBuilder<unknown>[] {
  if (events.length === 0) return []
  const rows = store.values.rows(events, ['id', 'type', 'payload', 'created_at', 'lead_id'], 'e')
  const which = aboutStoredLeads ? sql`where exists (select 1 from leads as l where l.id = e.lead_id${store.values.perRow})` : sql``
  const insertEvents = sql`insert into webhook_events (id, type, payload, created_at, lead_id)
    select id, type, payload, created_at, lead_id from ${rows} ${which}`
  if (store.dialect === 'postgres') {
    return [
      sql`with ev as (${insertEvents} returning id, seq, type, created_at)
        insert into webhook_deliveries (endpoint_id, event_id, event_seq, status, next_attempt_at, created_at)
        select ep.id, ev.id, ev.seq, 'pending', ev.created_at, ev.created_at
        from ev inner join webhook_endpoints as ep on true
        where ep.disabled_at is null and ${subscribed}`,
    ]
  }
  const ids = store.values.rows(
    events.map((e) => ({ id: e.id })),
    ['id'],
    'i',
  )
  return [
    insertEvents,
    sql`insert into webhook_deliveries (endpoint_id, event_id, event_seq, status, next_attempt_at, created_at)
      select ep.id, ev.id, ev.seq, 'pending', ev.created_at, ev.created_at
      from webhook_events as ev inner join webhook_endpoints as ep on true
      where ev.id in (select id from ${ids}) and ep.disabled_at is null and ${subscribed}`,
  ]
}

/**
 * Writes events to the outbox and their deliveries (eventStatements), inside the transaction of
 * whatever the events announce (`db` is that transaction). Returns how many deliveries it created
 * (none when no endpoint is subscribed: nothing for a worker to do).
 */
export async function writeEvents(
  db: Kysely<Database>,
  store: Pick<Store, 'dialect' | 'values'>,
  events: readonly NewEvent[],
): Promise<number> {
  let deliveries = 0
  for (const statement of eventStatements(store, events)) {
    deliveries = Number((await db.executeQuery(statement.compile(db))).numAffectedRows ?? 0)
  }
  return deliveries
}

/**
 * Deletes the outbox events about these leads (their lead.received, and any earlier lead.erased);
 * each event's deliveries, pending, delivered or dead, go with it (ON DELETE CASCADE), and so do
 * those of any other channel of the outbox. Called inside an erasure's transaction.
 */
export async function deleteLeadEvents(db: Kysely<Database>, leadIds: readonly string[]): Promise<number> {
  if (leadIds.length === 0) return 0
  const res = await db.deleteFrom('webhook_events').where('lead_id', 'in', leadIds).executeTakeFirst()
  return Number(res.numDeletedRows)
}

/** One delivery of an event about a lead, as an access request shows it. */
export interface LeadDelivery {
  lead_id: string
  event_id: string
  event_type: string
  endpoint_id: string
  endpoint_url: string | null
  status: string
  attempts: number
  created_at: string
  last_attempt_at: string | null
  last_outcome: string | null
  delivered_at: string | null
}

/** Every delivery of the events about these leads, in event order. */
export async function leadDeliveries(db: Kysely<Database>, leadIds: readonly string[]): Promise<LeadDelivery[]> {
  if (leadIds.length === 0) return []
  const rows = await db
    .selectFrom('webhook_events as ev')
    .innerJoin('webhook_deliveries as d', 'd.event_id', 'ev.id')
    .leftJoin('webhook_endpoints as ep', 'ep.id', 'd.endpoint_id')
    .select([
      'ev.lead_id',
      'ev.id as event_id',
      'ev.type as event_type',
      'd.endpoint_id',
      'ep.url as endpoint_url',
      'd.status',
      'd.attempts',
      'd.created_at',
      'd.last_attempt_at',
      'd.last_outcome',
      'd.delivered_at',
    ])
    .where('ev.lead_id', 'in', leadIds)
    .orderBy('ev.seq')
    .orderBy('d.endpoint_id')
    .execute()
  return rows.map((r) => ({ ...r, lead_id: r.lead_id as string, attempts: Number(r.attempts) }))
}
