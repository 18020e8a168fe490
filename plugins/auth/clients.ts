// OAuth clients and API keys. Secrets are stored only as keyed hashes.
import type { Kysely, Selectable } from 'kysely'
import type { Dialect } from '../store/migrations.js'
import type { ApiKeysTable, ClientsTable, Database } from '../store/schema.js'
import { takeTurn } from '../store/turns.js'

export type ClientRow = Selectable<ClientsTable>
export type ApiKeyRow = Selectable<ApiKeysTable>

export class ClientsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  async create(row: ClientRow): Promise<void> {
    await this.db.insertInto('clients').values(row).execute()
  }

  /**
   * Creates the first client: `row` if there is none yet, else nothing (false). Starts that count
   * and insert together take turns, so one of them makes it.
   */
  async createFirst(row: ClientRow): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      await takeTurn(trx, this.dialect, 'first-client')
      const existing = await trx.selectFrom('clients').select('id').limit(1).executeTakeFirst()
      if (existing) return false
      await trx.insertInto('clients').values(row).execute()
      return true
    })
  }

  async find(id: string): Promise<ClientRow | undefined> {
    return this.db.selectFrom('clients').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async list(): Promise<ClientRow[]> {
    return this.db.selectFrom('clients').selectAll().orderBy('created_at').orderBy('id').execute()
  }

  async count(): Promise<number> {
    const row = await this.db
      .selectFrom('clients')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  /** Marks the client revoked; false when there is no such active client. */
  async revoke(id: string, at: string): Promise<boolean> {
    const res = await this.db
      .updateTable('clients')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  /**
   * Replaces the secret hash of an active client and counts its generation up (which ends the
   * tokens issued under the old secret); false when there is no such active client.
   */
  async rotate(id: string, secretHash: string): Promise<boolean> {
    const res = await this.db
      .updateTable('clients')
      .set((eb) => ({ secret_hash: secretHash, secret_generation: eb('secret_generation', '+', 1) }))
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }

  async createApiKey(row: ApiKeyRow): Promise<void> {
    await this.db.insertInto('api_keys').values(row).execute()
  }

  async findApiKeyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    return this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst()
  }

  async listApiKeys(): Promise<ApiKeyRow[]> {
    return this.db.selectFrom('api_keys').selectAll().orderBy('created_at').execute()
  }

  async revokeApiKey(id: string, at: string): Promise<boolean> {
    const res = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst()
    return Number(res.numUpdatedRows) > 0
  }
}
