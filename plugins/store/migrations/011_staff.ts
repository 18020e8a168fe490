// The studio's people (features/staff): staff accounts, the emailed sign-in codes, passkeys, and
// what the person-facing authorization server (oidc-provider) keeps: grants, sessions, codes,
// refresh tokens, interactions and registered clients, one row each, its payload as JSON. Access
// tokens are signed JWTs and are never stored.
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('staff')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('email', 'text', (c) => c.notNull().unique())
      .addColumn('name', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .execute()
    // A code asked for an address (staff or not: the page answers the same; only a hash of the
    // address is kept) from a client address: the budgets count these rows.
    await db.schema
      .createTable('staff_codes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('email_hash', 'text', (c) => c.notNull())
      .addColumn('staff_id', 'text')
      .addColumn('code_hash', 'text', (c) => c.notNull())
      .addColumn('requested_from', 'text', (c) => c.notNull())
      .addColumn('tries', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute()
    await db.schema.createIndex('staff_codes_email').on('staff_codes').columns(['email_hash', 'created_at']).execute()
    await db.schema.createIndex('staff_codes_from').on('staff_codes').columns(['requested_from', 'created_at']).execute()
    await db.schema
      .createTable('staff_passkeys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('staff_id', 'text', (c) => c.notNull())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('counter', 'integer', (c) => c.notNull())
      .addColumn('transports', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute()
    await db.schema.createIndex('staff_passkeys_staff').on('staff_passkeys').column('staff_id').execute()
    await db.schema
      .createTable('oidc_models')
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('id', 'text', (c) => c.notNull())
      .addColumn('payload', 'text', (c) => c.notNull())
      .addColumn('grant_id', 'text')
      .addColumn('uid', 'text')
      .addColumn('account_id', 'text')
      .addColumn('client_id', 'text')
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text')
      .addColumn('consumed_at', 'text')
      .addPrimaryKeyConstraint('oidc_models_pk', ['model', 'id'])
      .execute()
    await db.schema.createIndex('oidc_models_grant').on('oidc_models').column('grant_id').execute()
    await db.schema.createIndex('oidc_models_uid').on('oidc_models').column('uid').execute()
    await db.schema.createIndex('oidc_models_account').on('oidc_models').column('account_id').execute()
  },
})
