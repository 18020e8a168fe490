// A lead's fields are one JSON document (the spec's LeadFields), so a field added to the spec
// is stored and returned with no migration; id, commit order, time and client stay columns.
import { type Kysely, type Migration, sql } from 'kysely'
import type { Dialect } from '../migrations.js'

export default (dialect: Dialect): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('leads')
      .addColumn('fields', 'text', (c) => c.notNull().defaultTo('{}'))
      .execute()
    const object =
      dialect === 'postgres'
        ? sql`json_build_object('name', name, 'email', email, 'phone', phone)::text`
        : sql`json_object('name', name, 'email', email, 'phone', phone)`
    await sql`update leads set fields = ${object}`.execute(db)
    for (const column of ['name', 'email', 'phone']) await db.schema.alterTable('leads').dropColumn(column).execute()
  },
})
