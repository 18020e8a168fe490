// The personal-data side of storage: a person's leads found by address, leads past a cut-off, the
// erasure of a batch of leads with every copy in one transaction, and the record of each erasure.
import { createHmac } from 'node:crypto'
import { type Kysely, type Selectable, sql } from 'kysely'
import { canonicalEmail } from '../../lib/email-address.js'
import type { Dialect } from '../../plugins/store/migrations.js'
import type { Store } from '../../plugins/store/open.js'
import type { Database, LeadErasuresTable } from '../../plugins/store/schema.js'
import { takeTurn } from '../../plugins/store/turns.js'
import { type LeadRecord, toRecord } from '../leads/repository.js'
import { type ErasureReason, leadErased } from '../webhooks/events.js'
import { deleteLeadEvents, writeEvents } from '../webhooks/outbox.js'

export type Erasure = Pick<Selectable<LeadErasuresTable>, 'lead_id' | 'erased_at' | 'reason'>

/**
 * The erasure record's pseudonym of an address: HMAC-SHA256 under the server's key (the pepper of
 * the client-secret hashes), so that `export` can say an address was erased without the record
 * holding the address. It cannot be reversed; it can only be checked against a given address by
 * whoever holds the key.
 */
export const emailHash = (key: string, email: string): string =>
  createHmac('sha256', key)
    .update(`lead-erasure:${canonicalEmail(email)}`)
    .digest('hex')

export class PrivacyRepository {
  private readonly db: Kysely<Database>
  private readonly dialect: Dialect

  constructor(
    private readonly store: Pick<Store, 'db' | 'dialect' | 'values'>,
    /** The key of the erasure records' address hashes. */
    private readonly hashKey: string,
  ) {
    this.db = store.db
    this.dialect = store.dialect
  }

  /**
   * A lead's address as it is compared (canonicalEmail): its ASCII letters lower-cased. SQLite's
   * lower() folds ASCII only; PostgreSQL's follows the collation (a Turkish one lower-cases I to
   * dotless ı), so it is given "C", which folds ASCII only too.
   */
  private emailOf() {
    return this.dialect === 'postgres'
      ? sql<string>`lower((fields::json ->> 'email') collate "C")`
      : sql<string>`lower(json_extract(fields, '$.email'))`
  }

  /** The leads of an address (matched with ASCII letters in either case: lib/email-address.ts), oldest first. */
  async leadsByEmail(email: string): Promise<LeadRecord[]> {
    const rows = await this.db.selectFrom('leads').selectAll().where(this.emailOf(), '=', canonicalEmail(email)).orderBy('seq').execute()
    return rows.map(toRecord)
  }

  async leadById(id: string): Promise<LeadRecord | undefined> {
    const row = await this.db.selectFrom('leads').selectAll().where('id', '=', id).executeTakeFirst()
    return row && toRecord(row)
  }

  /** Ids of up to `limit` leads received strictly before `cutoff` (RFC 3339), oldest first. */
  async idsReceivedBefore(cutoff: string, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('leads')
      .select('id')
      .where('received_at', '<', cutoff)
      .orderBy('received_at')
      .limit(limit)
      .execute()
    return rows.map((r) => r.id)
  }

  /** How many leads were received strictly before `cutoff` (RFC 3339). */
  async countReceivedBefore(cutoff: string): Promise<number> {
    const row = await this.db
      .selectFrom('leads')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('received_at', '<', cutoff)
      .executeTakeFirst()
    return Number(row?.n ?? 0)
  }

  /** The erasures of an address, or of one lead, oldest first. */
  async erasures(which: { email: string } | { id: string }): Promise<Erasure[]> {
    let query = this.db.selectFrom('lead_erasures').select(['lead_id', 'erased_at', 'reason'])
    query = 'email' in which ? query.where('email_hash', '=', emailHash(this.hashKey, which.email)) : query.where('lead_id', '=', which.id)
    return query.orderBy('erased_at').orderBy('lead_id').execute()
  }

  /**
   * Erases these leads and every copy, in one transaction: the lead, its outbox events (and with
   * them their deliveries and dead letters), its idempotency records; records the erasure and
   * writes a `lead.erased` event for every subscribed endpoint. Either all of it commits or none.
   * A lead already gone (erased by another process meanwhile) is skipped: each erasure is
   * recorded and announced once. Returns the ids erased.
   */
  async eraseBatch(ids: readonly string[], reason: ErasureReason, at: string): Promise<string[]> {
    if (ids.length === 0) return []
    return this.db.transaction().execute(async (trx) => {
      // PostgreSQL: erasures one at a time (per schema), so that two of them over the same leads
      // (a request and the retention sweep, two instances' sweeps) never deadlock on row locks.
      await takeTurn(trx, this.dialect, 'lead-erasure')
      const gone = await trx.deleteFrom('leads').where('id', 'in', ids).returning(['id', 'fields', 'seq']).execute()
      if (gone.length === 0) return []
      const erased = gone.map((r) => r.id)
      await deleteLeadEvents(trx, erased)
      await trx.deleteFrom('idempotency_keys').where('lead_id', 'in', erased).execute()
      await trx
        .insertInto('lead_erasures')
        .values(
          gone.map((r) => ({
            lead_id: r.id,
            email_hash: emailHash(this.hashKey, String((JSON.parse(r.fields) as { email?: unknown }).email ?? '')),
            erased_at: at,
            reason,
            scrubbed_at: null,
            seq: Number(r.seq),
          })),
        )
        .execute()
      await writeEvents(
        trx,
        this.store,
        erased.map((id) => leadErased(id, at, reason)),
      )
      return erased
    })
  }

  /** Erasures whose bytes may still be in the SQLite files (scrub.ts has not finished since). */
  async unscrubbed(): Promise<string[]> {
    const rows = await this.db.selectFrom('lead_erasures').select('lead_id').where('scrubbed_at', 'is', null).execute()
    return rows.map((r) => r.lead_id)
  }

  async markScrubbed(ids: readonly string[], at: string): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) {
      await this.db
        .updateTable('lead_erasures')
        .set({ scrubbed_at: at })
        .where('lead_id', 'in', ids.slice(i, i + 500))
        .execute()
    }
  }
}
