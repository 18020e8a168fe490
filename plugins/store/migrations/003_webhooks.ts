// Lead delivery (features/webhooks): the endpoints, the outbox of events (written in the
// transaction of the lead they announce) and one delivery row per event and endpoint, the
// delivery worker's queue. An endpoint's lease says which instance delivers to it now.
import type { Kysely, Migration } from 'kysely'
import type { Dialect } from '../migrations.js'

export default (dialect: Dialect): Migration => ({
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
})
