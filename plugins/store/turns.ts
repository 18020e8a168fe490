// Transactions that must take turns across processes (instances, operator commands): on
// PostgreSQL a transaction-scoped advisory lock of this schema's `name`, the transaction's first
// statement, held to its commit; on SQLite a writing transaction already holds the database's one
// write lock, so there is nothing to take. A batch (store/batch.ts) takes its turn the same way.
import { type RawBuilder, sql, type Transaction } from 'kysely'
import type { Dialect } from './migrations.js'
import type { Database } from './schema.js'

/** The PostgreSQL statement that takes this schema's turn `name`. */
export const turnStatement = (name: string): RawBuilder<unknown> =>
  sql`select pg_advisory_xact_lock(hashtext(current_schema() || ${`.${name}`}))`

export async function takeTurn(trx: Transaction<Database>, dialect: Dialect, name: string): Promise<void> {
  if (dialect === 'postgres') await turnStatement(name).execute(trx)
}
