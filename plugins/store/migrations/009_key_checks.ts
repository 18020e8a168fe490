// What the database remembers of the keys its data depends on, without the keys: a check
// value of the secret pepper its client secrets and API keys are hashed with (plugins/auth).
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('key_checks')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute()
  },
})
