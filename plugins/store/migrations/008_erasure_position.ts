// An erased lead keeps its place in the log: its erasure record holds the log position
// (`seq`) it had, so a reader paging with `after=` that erased lead's id goes on from there
// (not personal data: a number). Erasures recorded before this have none.
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('lead_erasures').addColumn('seq', 'integer').execute()
  },
})
