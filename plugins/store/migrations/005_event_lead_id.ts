// The lead an outbox event is about (null for events about no lead, such as webhook.test), so
// that a lead's events are found without reading payloads: replaying a lead's event by its
// id, and erasing every copy of a lead (personal data). Older events are filled in from
// their payload's `data.id`.
import { type Kysely, type Migration, sql } from 'kysely'
import type { Dialect } from '../migrations.js'

export default (dialect: Dialect): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('webhook_events').addColumn('lead_id', 'text').execute()
    const leadId = dialect === 'postgres' ? sql`(payload::json -> 'data' ->> 'id')` : sql`json_extract(payload, '$.data.id')`
    await sql`update webhook_events set lead_id = ${leadId} where type = 'lead.received'`.execute(db)
    await db.schema.createIndex('webhook_events_lead_id').on('webhook_events').column('lead_id').execute()
  },
})
