// The first schema: clients, API keys, leads, idempotency keys and the catalogue.
import type { Kysely, Migration } from 'kysely'
import type { Dialect } from '../migrations.js'

export default (dialect: Dialect): Migration => ({
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
})
