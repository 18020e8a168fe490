// What an operator reads of the deliveries (`studio webhooks status`, `studio email status`): each
// endpoint's health and counts, and the dead letters.
import { type Kysely, sql } from 'kysely'
import type { Database, EndpointKind } from '../../plugins/store/schema.js'

export interface EndpointStatus {
  id: string
  kind: EndpointKind
  url: string
  disabled_at: string | null
  disabled_reason: string | null
  failing_since: string | null
  last_failure: string | null
  last_failure_at: string | null
  pending: number
  delivered: number
  dead: number
  oldest_pending: string | null
  /** When the next attempt of a pending delivery is due (held ones: when they are looked at again). */
  next_attempt_at: string | null
}

export interface DeadLetter {
  endpoint_id: string
  event_id: string
  event_type: string
  lead_id: string | null
  attempts: number
  last_outcome: string | null
  last_attempt_at: string | null
}

export async function endpointStatus(db: Kysely<Database>): Promise<EndpointStatus[]> {
  // What status shows of each endpoint, beside its counts (selected and grouped by).
  const ENDPOINT_COLUMNS = [
    'ep.id',
    'ep.kind',
    'ep.url',
    'ep.disabled_at',
    'ep.disabled_reason',
    'ep.failing_since',
    'ep.last_failure',
    'ep.last_failure_at',
  ] as const
  const count = (status: string) => sql<number>`coalesce(sum(case when d.status = ${status} then 1 else 0 end), 0)`
  const rows = await db
    .selectFrom('webhook_endpoints as ep')
    .leftJoin('webhook_deliveries as d', 'd.endpoint_id', 'ep.id')
    .select([
      ...ENDPOINT_COLUMNS,
      count('pending').as('pending'),
      count('delivered').as('delivered'),
      count('dead').as('dead'),
      sql<string | null>`min(case when d.status = 'pending' then d.created_at end)`.as('oldest_pending'),
      sql<string | null>`min(case when d.status = 'pending' then d.next_attempt_at end)`.as('next_attempt_at'),
    ])
    .groupBy([...ENDPOINT_COLUMNS, 'ep.created_at'])
    .orderBy('ep.created_at')
    .execute()
  return rows.map((r) => ({ ...r, pending: Number(r.pending), delivered: Number(r.delivered), dead: Number(r.dead) }))
}

/** Dead letters, oldest event first (of one endpoint when named). */
export async function deadLetters(db: Kysely<Database>, limit: number, endpointId?: string): Promise<DeadLetter[]> {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as ev', 'ev.id', 'd.event_id')
    .select(['d.endpoint_id', 'd.event_id', 'ev.type as event_type', 'ev.lead_id', 'd.attempts', 'd.last_outcome', 'd.last_attempt_at'])
    .where('d.status', '=', 'dead')
  if (endpointId) query = query.where('d.endpoint_id', '=', endpointId)
  const rows = await query.orderBy('d.event_seq').limit(limit).execute()
  return rows.map((r) => ({ ...r, attempts: Number(r.attempts) }))
}
