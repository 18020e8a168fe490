// Leads and their idempotency keys. A batch is one transaction: many leads, one commit.
import type { Kysely, Selectable } from 'kysely'
import type { Database, IdempotencyKeysTable, LeadsTable } from './schema.js'

export type LeadRow = Omit<Selectable<LeadsTable>, 'seq'> & { seq: number }
export type NewLead = Omit<LeadRow, 'seq'>
export type IdempotencyClaim = IdempotencyKeysTable

export interface IdempotencyRecord {
  body_hash: string
  lead_id: string
  received_at: string
}

const ownerKey = (owner: string, key: string) => `${owner}\u0000${key}`

export class LeadsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Stores a batch of leads in one transaction. `claims` maps a lead id to its idempotency
   * claim; such a lead is stored only if its key is free (or expired: created before
   * `claimCutoff`). Returns the ids of the leads whose claim lost to a live key (not stored).
   */
  async insertBatch(leads: NewLead[], claims: Map<string, IdempotencyClaim>, claimCutoff: string): Promise<Set<string>> {
    const lost = new Set<string>()
    await this.db.transaction().execute(async (trx) => {
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
      const rows = leads.filter((l) => !lost.has(l.id))
      if (rows.length > 0) await trx.insertInto('leads').values(rows).execute()
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
  async page(afterSeq: number, limit: number): Promise<LeadRow[]> {
    const rows = await this.db.selectFrom('leads').selectAll().where('seq', '>', afterSeq).orderBy('seq').limit(limit).execute()
    return rows.map((r) => ({ ...r, seq: Number(r.seq) }))
  }

  async seqOf(id: string): Promise<number | undefined> {
    const row = await this.db.selectFrom('leads').select('seq').where('id', '=', id).executeTakeFirst()
    return row ? Number(row.seq) : undefined
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('leads')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }
}
