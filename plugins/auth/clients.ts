// OAuth clients and API keys. Secrets are stored only as keyed hashes.
import type { Kysely, Selectable } from 'kysely'
import type { ApiKeysTable, ClientsTable, Database } from '../store/schema.js'

export type ClientRow = Selectable<ClientsTable>
export type ApiKeyRow = Selectable<ApiKeysTable>

export class ClientsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async create(row: ClientRow): Promise<void> {
    await this.db.insertInto('clients').values(row).execute()
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
