// The instances that deliver from this storage's outbox, and the one setting of theirs that
// decides whether they hold an endpoint back (WEBHOOKS_ALLOW_PRIVATE), so that the CLI can warn at
// once when an endpoint it adds would be held (features/webhooks/instances.ts). A row is kept
// fresh while its instance runs and removed when it stops.
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('delivery_instances')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('allow_private', 'integer', (c) => c.notNull())
      .addColumn('started_at', 'text', (c) => c.notNull())
      .addColumn('seen_at', 'text', (c) => c.notNull())
      .execute()
  },
})
