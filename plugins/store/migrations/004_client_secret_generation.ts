// Which secret a client's tokens were issued under: rotating the secret counts it up, and a
// token of an earlier generation is refused (plugins/auth/client-status.ts).
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('clients')
      .addColumn('secret_generation', 'integer', (c) => c.notNull().defaultTo(0))
      .execute()
  },
})
