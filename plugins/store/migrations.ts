// Versioned migrations, the same on every backend. Kysely's Migrator keeps the applied list; on
// PostgreSQL it also takes a lock, so several instances starting together migrate once. On SQLite
// it takes none: open.ts runs one file's migrations one at a time instead.
import { type DatabaseIntrospector, type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely'

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
    // Lead delivery (features/webhooks): the endpoints, the outbox of events (written in the
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
    // The lead an outbox event is about (null for events about no lead, such as webhook.test), so
    // that a lead's events are found without reading payloads: replaying a lead's event by its
    // id, and erasing every copy of a lead (personal data). Older events are filled in from
    // their payload's `data.id`.
    '005_event_lead_id': {
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('webhook_events').addColumn('lead_id', 'text').execute()
        const leadId = dialect === 'postgres' ? sql`(payload::json -> 'data' ->> 'id')` : sql`json_extract(payload, '$.data.id')`
        await sql`update webhook_events set lead_id = ${leadId} where type = 'lead.received'`.execute(db)
        await db.schema.createIndex('webhook_events_lead_id').on('webhook_events').column('lead_id').execute()
      },
    },
    // Personal data (features/privacy): how each lead arrived and when the person consented; the
    // record of each erasure (no personal data: the lead id, when, why, and a keyed hash of the
    // address so that an access request can be told it was erased); received_at indexed for the
    // retention sweep. Endpoints that receive leads hear of their erasure (lead.erased).
    '006_personal_data': {
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('leads').addColumn('source', 'text').execute()
        await db.schema.alterTable('leads').addColumn('consented_at', 'text').execute()
        await db.schema.createIndex('leads_received_at').on('leads').column('received_at').execute()
        await db.schema
          .createTable('lead_erasures')
          .addColumn('lead_id', 'text', (c) => c.primaryKey())
          .addColumn('email_hash', 'text', (c) => c.notNull())
          .addColumn('erased_at', 'text', (c) => c.notNull())
          .addColumn('reason', 'text', (c) => c.notNull())
          .addColumn('scrubbed_at', 'text')
          .execute()
        await db.schema.createIndex('lead_erasures_email_hash').on('lead_erasures').column('email_hash').execute()
        // An event's deliveries by event: what ON DELETE CASCADE looks up for each deleted event
        // (erasure, the payload sweep), and what the sweep asks of each old event.
        await db.schema.createIndex('webhook_deliveries_event_id').on('webhook_deliveries').column('event_id').execute()
        await sql`update webhook_endpoints set events = events || ' lead.erased'
          where (' ' || events || ' ') like '% lead.received %' and (' ' || events || ' ') not like '% lead.erased %'`.execute(db)
      },
    },
    // Lead delivery's second channel, and what an operator sees of each endpoint: an endpoint's
    // `kind` says how its deliveries go (`webhook`: signed HTTP; `email`: the studio's inbox, a
    // built-in endpoint the server keeps from SMTP_URL and LEAD_EMAIL_TO), so an email is a
    // delivery row like any other (deleted with its event). The worker keeps each endpoint's
    // health: failing since when (its failing turns are served apart from the healthy ones), the
    // last failure and when, and when it was last served (turns go round, least recent first).
    '007_email_channel': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .alterTable('webhook_endpoints')
          .addColumn('kind', 'text', (c) => c.notNull().defaultTo('webhook'))
          .execute()
        for (const column of ['failing_since', 'last_failure', 'last_failure_at', 'served_at']) {
          await db.schema.alterTable('webhook_endpoints').addColumn(column, 'text').execute()
        }
      },
    },
    // An erased lead keeps its place in the log: its erasure record holds the log position
    // (`seq`) it had, so a reader paging with `after=` that erased lead's id goes on from there
    // (not personal data: a number). Erasures recorded before this have none.
    '008_erasure_position': {
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('lead_erasures').addColumn('seq', 'integer').execute()
      },
    },
    // What the database remembers of the keys its data depends on, without the keys: a check
    // value of the secret pepper its client secrets and API keys are hashed with (plugins/auth).
    '009_key_checks': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('key_checks')
          .addColumn('name', 'text', (c) => c.primaryKey())
          .addColumn('value', 'text', (c) => c.notNull())
          .execute()
      },
    },
  }
}

/** Kysely's Migrator over these migrations. */
export async function migrator(db: Kysely<unknown>, dialect: Dialect): Promise<Migrator> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) }
  if (dialect !== 'postgres') return new Migrator({ db, provider })
  // On PostgreSQL the Migrator finds its own tables through db.introspection, which reads every
  // table of every schema in the database and calls functions on each schema's name: a schema
  // that another application (or a test) drops during that query fails it with
  // `invalid_schema_name` (CI saw it: "schema t_… does not exist", a schema not ours). Pin the
  // Migrator to ours (the connection's search_path) and let it look there only.
  const schema = (await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
  if (!schema) return new Migrator({ db, provider })
  return new Migrator({ db: withIntrospectionOf(db, schema), provider, migrationTableSchema: schema })
}

/**
 * The same Kysely, whose introspection sees one schema: its name among the schemas, its tables
 * (names only: all the Migrator asks of them). Everything else is the Kysely itself.
 */
function withIntrospectionOf(db: Kysely<unknown>, schema: string): Kysely<unknown> {
  const introspection: DatabaseIntrospector = {
    async getSchemas() {
      const { rows } = await sql<{ name: string }>`
        select nspname as name from pg_catalog.pg_namespace where nspname = ${schema}`.execute(db)
      return rows
    },
    async getTables() {
      const { rows } = await sql<{ name: string; kind: string }>`
        select c.relname as name, c.relkind as kind
        from pg_catalog.pg_class c join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
        where ns.nspname = ${schema} and c.relkind in ('r', 'v', 'p')`.execute(db)
      return rows.map((r) => ({ name: r.name, schema, isView: r.kind === 'v', columns: [] }))
    },
    async getMetadata() {
      return { tables: await this.getTables() }
    },
  }
  return new Proxy(db, {
    get(target, key) {
      if (key === 'introspection') return introspection
      const value = Reflect.get(target, key, target)
      // Kysely's methods use private fields: they run on the Kysely, not on this proxy.
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const { error, results } = await (await migrator(db, dialect)).migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new Error(`Database migration ${failed} failed: ${(error as Error).message ?? String(error)}`)
  }
}

/** The names of the migrations this version knows (a restore refuses a database that has others). */
export const migrationNames = (): string[] => Object.keys(migrations('sqlite'))
