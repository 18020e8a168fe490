// A lead as the log shows it (the spec's LeadLogEntry): what getLeads, recent_leads, the
// lead.received event and an access request all answer, made in one place.
import type { components } from '../../generated/openapi.js'
import type { LeadRecord, NewLead } from './repository.js'

export type LeadLogEntry = components['schemas']['LeadLogEntry']

/** A stored lead as the log shows it: its fields, and what the server added. */
export function logEntry(record: LeadRecord | NewLead): LeadLogEntry {
  return {
    id: record.id,
    ...record.fields,
    received_at: record.received_at,
    client_id: record.client_id,
    ...(record.source !== undefined && { source: record.source }),
    ...(record.consented_at !== undefined && { consented_at: record.consented_at }),
  }
}
