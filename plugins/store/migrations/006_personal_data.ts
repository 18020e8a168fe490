// Personal data (features/privacy): how each lead arrived and when the person consented; the
// record of each erasure (no personal data: the lead id, when, why, and a keyed hash of the
// address so that an access request can be told it was erased); received_at indexed for the
// retention sweep. Endpoints that receive leads hear of their erasure (lead.erased).
import { type Kysely, type Migration, sql } from 'kysely'

export default (): Migration => ({
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
})
