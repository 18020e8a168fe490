// One-time enrolment links (features/staff/enrolments.ts): the operator hands one to a person who
// cannot receive an emailed code (no SMTP_URL), and opening it lets them add a passkey. Only a
// hash of the link's token is kept; a link works once, for 7 days.
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('staff_enrolments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('staff_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'text', (c) => c.notNull())
      .addColumn('expires_at', 'text', (c) => c.notNull())
      .addColumn('used_at', 'text')
      .execute()
    await db.schema.createIndex('staff_enrolments_staff').on('staff_enrolments').column('staff_id').execute()
  },
})
