// The migrations, in order: one file each (NNN_what.ts), named here so that the bundle holds them.
// A new migration is a new file and a line here; an applied one is never edited.
import type { Migration } from 'kysely'
import type { Dialect } from '../migrations.js'
import m001 from './001_initial.js'
import m002 from './002_lead_fields_document.js'
import m003 from './003_webhooks.js'
import m004 from './004_client_secret_generation.js'
import m005 from './005_event_lead_id.js'
import m006 from './006_personal_data.js'
import m007 from './007_email_channel.js'
import m008 from './008_erasure_position.js'
import m009 from './009_key_checks.js'
import m010 from './010_delivery_instances.js'
import m011 from './011_staff.js'
import m012 from './012_staff_enrolments.js'

export const MIGRATIONS: Record<string, (dialect: Dialect) => Migration> = {
  '001_initial': m001,
  '002_lead_fields_document': m002,
  '003_webhooks': m003,
  '004_client_secret_generation': m004,
  '005_event_lead_id': m005,
  '006_personal_data': m006,
  '007_email_channel': m007,
  '008_erasure_position': m008,
  '009_key_checks': m009,
  '010_delivery_instances': m010,
  '011_staff': m011,
  '012_staff_enrolments': m012,
}
