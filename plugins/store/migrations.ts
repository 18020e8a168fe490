// Versioned migrations, the same on every backend (Kysely's Migrator keeps the applied list
// and a lock, so several instances starting together migrate once).
import { type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely'

export type Dialect = 'sqlite' | 'postgres'

function migrations(dialect: Dialect): Record<string, Migration> {
  return {
    '001_initial': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('clients')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('scopes', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('revoked_at', 'text')
          .execute()
        await db.schema
          .createTable('api_keys')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('scopes', 'text', (c) => c.notNull())
          .addColumn('key_hash', 'text', (c) => c.notNull().unique())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('revoked_at', 'text')
          .execute()
        await db.schema
          .createTable('leads')
          .addColumn('seq', dialect === 'postgres' ? 'serial' : 'integer', (c) =>
            dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
          )
          .addColumn('id', 'text', (c) => c.notNull().unique())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('email', 'text', (c) => c.notNull())
          .addColumn('phone', 'text', (c) => c.notNull())
          .addColumn('received_at', 'text', (c) => c.notNull())
          .addColumn('client_id', 'text')
          .execute()
        await db.schema
          .createTable('idempotency_keys')
          .addColumn('owner', 'text', (c) => c.notNull())
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('body_hash', 'text', (c) => c.notNull())
          .addColumn('lead_id', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('idempotency_keys_pk', ['owner', 'key'])
          .execute()
        await db.schema.createIndex('idempotency_keys_created_at').on('idempotency_keys').column('created_at').execute()
        await db.schema
          .createTable('projects')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('position', 'integer', (c) => c.notNull())
          .addColumn('doc', 'text', (c) => c.notNull())
          .execute()
        await db.schema
          .createTable('catalogue')
          .addColumn('id', 'integer', (c) => c.primaryKey())
          .addColumn('etag', 'text', (c) => c.notNull())
          .addColumn('published_at', 'text', (c) => c.notNull())
          .execute()
      },
    },
  }
}

export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) }
  // On PostgreSQL the Migrator looks for its own tables across every schema; pin it to ours
  // (the connection's search_path), so a database with other schemas does not confuse it.
  const schema =
    dialect === 'postgres' ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema : undefined
  const { error, results } = await new Migrator({ db, provider, ...(schema && { migrationTableSchema: schema }) }).migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new Error(`Database migration ${failed} failed: ${(error as Error).message ?? String(error)}`)
  }
}
