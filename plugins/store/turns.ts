// Transactions that must take turns across processes (instances, operator commands): on
// PostgreSQL a transaction-scoped advisory lock of this schema's `name`, the transaction's first
// statement, held to its commit; on SQLite a writing transaction already holds the database's one
// write lock, so there is nothing to take.
import { type Kysely, sql, type Transaction } from 'kysely'
import type { Dialect } from './migrations.js'
import type { Database } from './schema.js'

export async function takeTurn(trx: Transaction<Database> | Kysely<Database>, dialect: Dialect, name: string): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(current_schema() || ${`.${name}`}))`.execute(trx)
}
