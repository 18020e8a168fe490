// Versioned migrations, the same on every backend. Kysely's Migrator keeps the applied list; on
// PostgreSQL it also takes a lock, so several instances starting together migrate once. On SQLite
// it takes none: open.ts runs one file's migrations one at a time instead.
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
    // A lead's fields are one JSON document (the spec's LeadFields), so a field added to the spec
    // is stored and returned with no migration; id, commit order, time and client stay columns.
    '002_lead_fields_document': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .alterTable('leads')
          .addColumn('fields', 'text', (c) => c.notNull().defaultTo('{}'))
          .execute()
        const object =
          dialect === 'postgres'
            ? sql`json_build_object('name', name, 'email', email, 'phone', phone)::text`
            : sql`json_object('name', name, 'email', email, 'phone', phone)`
        await sql`update leads set fields = ${object}`.execute(db)
        for (const column of ['name', 'email', 'phone']) await db.schema.alterTable('leads').dropColumn(column).execute()
      },
    },
    // Lead delivery (plugins/webhooks): the endpoints, the outbox of events (written in the
    // transaction of the lead they announce) and one delivery row per event and endpoint, the
    // delivery worker's queue. An endpoint's lease says which instance delivers to it now.
    '003_webhooks': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('webhook_endpoints')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('events', 'text', (c) => c.notNull())
          .addColumn('secret', 'text', (c) => c.notNull())
          .addColumn('previous_secret', 'text')
          .addColumn('previous_secret_until', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addColumn('disabled_at', 'text')
          .addColumn('disabled_reason', 'text')
          .addColumn('lease_owner', 'text')
          .addColumn('lease_until', 'text')
          .execute()
        await db.schema
          .createTable('webhook_events')
          .addColumn('seq', dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
            dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
          )
          .addColumn('id', 'text', (c) => c.notNull().unique())
          .addColumn('type', 'text', (c) => c.notNull())
          .addColumn('payload', 'text', (c) => c.notNull())
          .addColumn('created_at', 'text', (c) => c.notNull())
          .execute()
        await db.schema.createIndex('webhook_events_created_at').on('webhook_events').column('created_at').execute()
        await db.schema
          .createTable('webhook_deliveries')
          .addColumn('endpoint_id', 'text', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
          .addColumn('event_id', 'text', (c) => c.notNull().references('webhook_events.id').onDelete('cascade'))
          .addColumn('event_seq', 'bigint', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', 'text', (c) => c.notNull())
          .addColumn('last_attempt_at', 'text')
          .addColumn('last_outcome', 'text')
          .addColumn('delivered_at', 'text')
          .addColumn('created_at', 'text', (c) => c.notNull())
          .addPrimaryKeyConstraint('webhook_deliveries_pk', ['endpoint_id', 'event_id'])
          .execute()
        // The worker's question: what is due for this endpoint, in event order.
        await db.schema
          .createIndex('webhook_deliveries_due')
          .on('webhook_deliveries')
          .columns(['endpoint_id', 'status', 'next_attempt_at', 'event_seq'])
          .execute()
      },
    },
    // Which secret a client's tokens were issued under: rotating the secret counts it up, and a
    // token of an earlier generation is refused (plugins/auth/client-status.ts).
    '004_client_secret_generation': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .alterTable('clients')
          .addColumn('secret_generation', 'integer', (c) => c.notNull().defaultTo(0))
          .execute()
      },
    },
  }
}

/** Kysely's Migrator over these migrations. */
export async function migrator(db: Kysely<unknown>, dialect: Dialect): Promise<Migrator> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) }
  // On PostgreSQL the Migrator looks for its own tables across every schema; pin it to ours
  // (the connection's search_path), so a database with other schemas does not confuse it.
  const schema = await connectionSchema(db, dialect)
  return new Migrator({ db, provider, ...(schema && { migrationTableSchema: schema }) })
}

/** The schema this connection works in (its search_path), on PostgreSQL. */
async function connectionSchema(db: Kysely<unknown>, dialect: Dialect): Promise<string | undefined> {
  if (dialect !== 'postgres') return undefined
  return (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
}

/**
 * Kysely finds its migration table by introspecting every table of every schema in the database
 * (PostgresIntrospector.getTables), calling functions on each schema's name: a schema that another
 * application (or a test) drops during that query fails it with `invalid_schema_name`. Nothing was
 * migrated then; the introspection is simply run again.
 */
const isIntrospectionRace = (err: unknown, ours: string | undefined): boolean => {
  const e = err as { code?: string; message?: string } | undefined
  return e?.code === '3F000' && ours !== undefined && !String(e.message).includes(`"${ours}"`)
}

export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  let outcome = await (await migrator(db, dialect)).migrateToLatest()
  const ours = await connectionSchema(db, dialect)
  for (let attempt = 1; attempt < 4 && isIntrospectionRace(outcome.error, ours); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 50 * attempt))
    outcome = await (await migrator(db, dialect)).migrateToLatest()
  }
  const { error, results } = outcome
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new Error(`Database migration ${failed} failed: ${(error as Error).message ?? String(error)}`)
  }
}
