// Leads and their idempotency keys. A batch is one transaction: many leads, one commit.
// A lead's fields (the spec's LeadFields, whatever they are) are stored as one JSON document.
import { type Kysely, type Selectable, sql, type Transaction } from 'kysely'
import type { components } from '../../generated/openapi.js'
import type { Dialect } from '../store/migrations.js'
import type { Database, IdempotencyKeysTable, LeadSource, LeadsTable } from '../store/schema.js'

export type LeadFields = components['schemas']['LeadFields']

/** A stored lead: its fields and what the server adds. */
export interface LeadRecord {
  /** Commit order: the log's order and its paging cursor. */
  seq: number
  id: string
  fields: LeadFields
  received_at: string
  client_id: string | null
  /** How it arrived (absent for leads stored before it was recorded). */
  source?: LeadSource
  /** When the person consented to be contacted, if they did with this lead. */
  consented_at?: string
}
export type NewLead = Omit<LeadRecord, 'seq'>

/**
 * What another feature may do with a batch of leads as it is stored, without the leads feature
 * knowing that feature: `inTransaction` runs inside the batch's transaction with the leads it
 * stores (never one whose idempotency claim lost), so whatever it writes commits or rolls back
 * with them (a transactional outbox); if it throws, nothing of the batch is stored.
 * `afterCommit` runs once they are durable.
 */
export interface LeadListener {
  inTransaction(trx: Transaction<Database>, stored: readonly NewLead[]): Promise<void>
  afterCommit?(stored: readonly NewLead[]): void
}
export type IdempotencyClaim = IdempotencyKeysTable

export const toRecord = (row: Selectable<LeadsTable>): LeadRecord => ({
  seq: Number(row.seq),
  id: row.id,
  fields: JSON.parse(row.fields) as LeadFields,
  received_at: row.received_at,
  client_id: row.client_id,
  ...(row.source !== null && { source: row.source }),
  ...(row.consented_at !== null && { consented_at: row.consented_at }),
})

export interface IdempotencyRecord {
  body_hash: string
  lead_id: string
  received_at: string
}

const ownerKey = (owner: string, key: string) => `${owner}\u0000${key}`

export class LeadsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    /** Run inside every batch's transaction (the list may grow after construction). */
    private readonly listeners: readonly LeadListener[] = [],
  ) {}

  /**
   * Stores a batch of leads in one transaction. `claims` maps a lead id to its idempotency
   * claim; such a lead is stored only if its key is free (or expired: created before
   * `claimCutoff`). Returns the ids of the leads whose claim lost to a live key (not stored).
   * The listeners run inside the same transaction, with the leads it stores.
   *
   * The log's order (`seq`) is its commit order, so a reader paging with a cursor never skips a
   * lead: batches commit one at a time. On SQLite the write lock does it. On PostgreSQL, where
   * instances commit concurrently and a sequence hands out `seq` before the commit, a batch
   * holds a transaction lock of the schema's leads log from before its first write (before the
   * idempotency claims too, so that two batches never wait for each other's rows and locks at
   * once) until its commit: without it, a batch drawing seq 101 could commit, and be read, before
   * one holding seq 100, which a reader past 101 would then never see.
   */
  async insertBatch(leads: NewLead[], claims: Map<string, IdempotencyClaim>, claimCutoff: string): Promise<Set<string>> {
    const lost = new Set<string>()
    await this.db.transaction().execute(async (trx) => {
      if (this.dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(current_schema() || '.leads-log'))`.execute(trx)
      if (claims.size > 0) {
        const won = await trx
          .insertInto('idempotency_keys')
          .values([...claims.values()])
          .onConflict((oc) =>
            oc
              .columns(['owner', 'key'])
              .doUpdateSet((eb) => ({
                body_hash: eb.ref('excluded.body_hash'),
                lead_id: eb.ref('excluded.lead_id'),
                created_at: eb.ref('excluded.created_at'),
              }))
              .where('idempotency_keys.created_at', '<', claimCutoff),
          )
          .returning(['owner', 'key'])
          .execute()
        const wonKeys = new Set(won.map((r) => ownerKey(r.owner, r.key)))
        for (const [leadId, claim] of claims) {
          if (!wonKeys.has(ownerKey(claim.owner, claim.key))) lost.add(leadId)
        }
      }
      const stored = leads.filter((l) => !lost.has(l.id))
      if (stored.length === 0) return
      const rows = stored.map((l) => ({
        id: l.id,
        fields: JSON.stringify(l.fields),
        received_at: l.received_at,
        client_id: l.client_id,
        source: l.source ?? null,
        consented_at: l.consented_at ?? null,
      }))
      await trx.insertInto('leads').values(rows).execute()
      for (const listener of this.listeners) await listener.inTransaction(trx, stored)
    })
    return lost
  }

  /** The live record of an idempotency key, if any. */
  async findIdempotency(owner: string, key: string, cutoff: string): Promise<IdempotencyRecord | undefined> {
    return this.db
      .selectFrom('idempotency_keys as k')
      .innerJoin('leads as l', 'l.id', 'k.lead_id')
      .select(['k.body_hash', 'k.lead_id', 'l.received_at'])
      .where('k.owner', '=', owner)
      .where('k.key', '=', key)
      .where('k.created_at', '>=', cutoff)
      .executeTakeFirst()
  }

  async sweepIdempotency(cutoff: string): Promise<number> {
    const res = await this.db.deleteFrom('idempotency_keys').where('created_at', '<', cutoff).executeTakeFirst()
    return Number(res.numDeletedRows)
  }

  /** Leads after the given commit position, oldest first. */
  async page(afterSeq: number, limit: number): Promise<LeadRecord[]> {
    const rows = await this.db.selectFrom('leads').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute()
    return rows.map(toRecord)
  }

  /**
   * The newest leads first, at most `limit`, received at or after `since` (an ISO instant, the
   * form received_at is stored in) when given. Walks the commit order backwards: without `since`
   * it reads no more rows than it returns; with it, older rows are read and skipped until `limit`
   * is reached (received_at has no index: an occasional agent query, not a hot path).
   */
  async recent(since: string | undefined, limit: number): Promise<LeadRecord[]> {
    let query = this.db.selectFrom('leads').selectAll()
    if (since !== undefined) query = query.where('received_at', '>=', since)
    const rows = await query.orderBy('seq', 'desc').limit(limit).execute()
    return rows.map(toRecord)
  }

  /**
   * A lead's place in the log; for a lead erased since (plugins/privacy records it), the place it
   * had, so that a reader whose last page ended with it goes on where it was.
   */
  async seqOf(id: string): Promise<number | undefined> {
    const row =
      (await this.db.selectFrom('leads').select('seq').where('id', '=', id).executeTakeFirst()) ??
      (await this.db.selectFrom('lead_erasures').select('seq').where('lead_id', '=', id).where('seq', 'is not', null).executeTakeFirst())
    return row?.seq == null ? undefined : Number(row.seq)
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('leads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }
}
