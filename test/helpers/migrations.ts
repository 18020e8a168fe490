// The migrations a store must have applied, written out (not read from the code): a migration
// renamed, dropped or reordered fails the store tests that compare against this list.
export const EXPECTED_MIGRATIONS = [
  '001_initial',
  '002_lead_fields_document',
  '003_webhooks',
  '004_client_secret_generation',
  '005_event_lead_id',
  '006_personal_data',
  '007_email_channel',
  '008_erasure_position',
  '009_key_checks',
  '010_delivery_instances',
  '011_staff',
  '012_staff_enrolments',
]
