// Leads and their idempotency keys. A batch is one transaction: many leads, one commit, one round
// trip (store/batch.ts). A lead's fields (the spec's LeadFields, whatever they are) are stored as
// one JSON document.
import { type RawBuilder, type Selectable, sql } from 'kysely'
import type { components } from '../../generated/openapi.js'
import type { BatchResult, BatchValues } from '../../plugins/store/batch.js'
import type { Store } from '../../plugins/store/open.js'
import type { IdempotencyKeysTable, LeadSource, LeadsTable } from '../../plugins/store/schema.js'

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
 * What another feature writes with a batch of leads as it is stored, without the leads feature
 * knowing that feature. `inTransaction` gives the statements (values from `values`) that run in
 * the batch's transaction, after the leads' own insert, so that what they write commits or rolls
 * back with the leads (a transactional outbox); if one fails, nothing of the batch is stored. The
 * batch is one round trip, so it is built before the idempotency claims are decided: `leads` may
 * hold a lead whose claim loses in that same transaction, which is then not stored, and the
 * statements must write only about the leads they find in the `leads` table. `afterCommit`, for
 * the writer to run once they are durable, gets the leads stored and what each statement returned.
 */
export interface LeadListener {
  inTransaction(leads: readonly NewLead[], values: BatchValues): RawBuilder<unknown>[]
  afterCommit?(stored: readonly NewLead[], results: readonly BatchResult[]): void
}
export type IdempotencyClaim = IdempotencyKeysTable

/** A stored batch: the leads whose claim lost to a live key (not stored), those stored, and what each listener's statements returned (in listener order). */
export interface StoredBatch {
  lost: Set<string>
  stored: NewLead[]
  results: BatchResult[][]
}

/** What the repository needs of the store. */
export type LeadsStore = Pick<Store, 'db' | 'dialect' | 'values' | 'batch'>

/** A lead as the batch's insert reads it: its row, and its idempotency claim if it has one. */
const LEAD_COLUMNS = ['id', 'fields', 'received_at', 'client_id', 'source', 'consented_at', 'claim_owner', 'claim_key'] as const
const CLAIM_COLUMNS = ['owner', 'claim_key', 'body_hash', 'lead_id', 'created_at'] as const

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

export class LeadsRepository {
  private readonly db: LeadsStore['db']

  constructor(
    private readonly store: LeadsStore,
    /** Their statements run in every batch's transaction (the list may grow after construction). */
    private readonly listeners: readonly LeadListener[] = [],
  ) {
    this.db = store.db
  }

  /**
   * Stores a batch of leads in one transaction, in one round trip. `claims` maps a lead id to its
   * idempotency claim; such a lead is stored only if its key is free (or expired: created before
   * `claimCutoff`), which the transaction decides: the claims are written first, and a lead with
   * one is inserted only if the key then names it. The listeners' statements follow.
   *
   * The log's order (`seq`) is its commit order, so a reader paging with a cursor never skips a
   * lead: batches commit one at a time. On SQLite the write lock does it. On PostgreSQL, where
   * instances commit concurrently and a sequence hands out `seq` before the commit, a batch
   * holds a transaction lock of the schema's leads log (its first statement) until its commit:
   * without it, a batch drawing seq 101 could commit, and be read, before one holding seq 100,
   * which a reader past 101 would then never see.
   */
  async insertBatch(leads: readonly NewLead[], claims: Map<string, IdempotencyClaim>, claimCutoff: string): Promise<StoredBatch> {
    const { values } = this.store
    const statements: RawBuilder<unknown>[] = []
    if (claims.size > 0) {
      const rows = [...claims.values()].map((c) => ({ ...c, claim_key: c.key }))
      statements.push(sql`insert into idempotency_keys (owner, "key", body_hash, lead_id, created_at)
        select owner, claim_key, body_hash, lead_id, created_at from ${values.rows(rows, CLAIM_COLUMNS, 'c')}
        where true
        on conflict (owner, "key") do update
          set body_hash = excluded.body_hash, lead_id = excluded.lead_id, created_at = excluded.created_at
          where idempotency_keys.created_at < ${claimCutoff}`)
    }
    const rows = leads.map((l) => {
      const claim = claims.get(l.id)
      return {
        id: l.id,
        fields: JSON.stringify(l.fields),
        received_at: l.received_at,
        client_id: l.client_id,
        source: l.source ?? null,
        consented_at: l.consented_at ?? null,
        claim_owner: claim?.owner ?? null,
        claim_key: claim?.key ?? null,
      }
    })
    statements.push(sql`insert into leads (id, fields, received_at, client_id, source, consented_at)
      select id, fields, received_at, client_id, source, consented_at from ${values.rows(rows, LEAD_COLUMNS, 'x')}
      where x.claim_owner is null
        or exists (select 1 from idempotency_keys k where k.owner = x.claim_owner and k."key" = x.claim_key and k.lead_id = x.id${values.perRow})
      returning id`)
    const inserted = statements.length - 1
    const own = this.listeners.map((listener) => listener.inTransaction(leads, values))
    for (const list of own) statements.push(...list)

    const results = await this.store.batch(statements, 'leads-log')
    const storedIds = new Set((results[inserted]?.rows ?? []).map((r) => String(r.id)))
    const lost = new Set<string>()
    const stored: NewLead[] = []
    for (const lead of leads) {
      if (storedIds.has(lead.id)) stored.push(lead)
      else lost.add(lead.id)
    }
    let next = inserted + 1
    const perListener = own.map((list) => {
      const mine = results.slice(next, next + list.length)
      next += list.length
      return mine
    })
    return { lost, stored, results: perListener }
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
   * A lead's place in the log; for a lead erased since (features/privacy records it), the place it
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
