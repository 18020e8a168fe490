// Which instances deliver from this storage's outbox now, and whether each would hold back an
// endpoint that only WEBHOOKS_ALLOW_PRIVATE allows (an http:// URL, a private address): each
// running instance keeps a row fresh (every HEARTBEAT_MS) and removes it when it stops; one that
// died leaves a row that goes stale. `studio webhooks add` reads them to warn at once, instead of a
// test delivery saying so 15 s later.
import type { Kysely } from 'kysely'
import type { Database } from '../../plugins/store/schema.js'

export const HEARTBEAT_MS = 30_000
/** A row not refreshed for this long is of an instance that is gone. */
const STALE_MS = 3 * HEARTBEAT_MS

export interface DeliveryInstance {
  id: string
  allowPrivate: boolean
  startedAt: string
}

export class DeliveryInstances {
  constructor(private readonly db: Kysely<Database>) {}

  /** Records (or refreshes) this instance. */
  async beat(id: string, allowPrivate: boolean, startedAt: string, now = new Date()): Promise<void> {
    await this.db
      .insertInto('delivery_instances')
      .values({ id, allow_private: allowPrivate ? 1 : 0, started_at: startedAt, seen_at: now.toISOString() })
      .onConflict((oc) => oc.column('id').doUpdateSet({ seen_at: now.toISOString(), allow_private: allowPrivate ? 1 : 0 }))
      .execute()
  }

  async remove(id: string): Promise<void> {
    await this.db.deleteFrom('delivery_instances').where('id', '=', id).execute()
  }

  /** The instances seen recently, oldest first; stale rows are removed on the way. */
  async running(now = new Date()): Promise<DeliveryInstance[]> {
    const cutoff = new Date(now.getTime() - STALE_MS).toISOString()
    await this.db.deleteFrom('delivery_instances').where('seen_at', '<', cutoff).execute()
    const rows = await this.db.selectFrom('delivery_instances').selectAll().orderBy('started_at').execute()
    return rows.map((r) => ({ id: r.id, allowPrivate: r.allow_private === 1, startedAt: r.started_at }))
  }
}
