// The events the studio sends: their types (the keys of the spec's `webhooks:` section), their
// ids, and their bodies (typed from the spec, built from what is stored: a lead's body is its log
// entry, so a field added to the spec's LeadFields is sent with no code change).
import type { components } from '../../generated/openapi.js'
import type { Spec } from '../../plugins/spec/document.js'
import { uuidv7 } from '../../plugins/store/ids.js'
import { logEntry } from '../leads/log-entry.js'
import type { NewLead } from '../leads/repository.js'

export type LeadReceivedEvent = components['schemas']['LeadReceivedEvent']
export type WebhookTestEvent = components['schemas']['WebhookTestEvent']
export type LeadErasedEvent = components['schemas']['LeadErasedEvent']
export type ErasureReason = LeadErasedEvent['data']['reason']

export const LEAD_RECEIVED: LeadReceivedEvent['type'] = 'lead.received'
/** Sent to every endpoint subscribed to it, which every endpoint receiving lead.received is. */
export const LEAD_ERASED: LeadErasedEvent['type'] = 'lead.erased'
/** Sent only on an operator's request, to the endpoint named; nobody subscribes to it. */
export const TEST_EVENT: WebhookTestEvent['type'] = 'webhook.test'

/** An event as the outbox keeps it. */
export interface NewEvent {
  /** `msg_…`: the `webhook-id` of every attempt and replay. */
  id: string
  type: string
  /** The body as it is signed and sent. */
  payload: string
  created_at: string
  /** The lead the event is about, if any. */
  lead_id: string | null
}

/** In time order (a UUIDv7's 32 hex digits), as lead ids: the outbox's id index grows at its end. */
export const newEventId = (): string => `msg_${uuidv7().replaceAll('-', '')}`

/** Event types an endpoint may subscribe to: the spec's webhooks, less the test event. */
export function subscribableTypes(spec: Spec): string[] {
  const declared = Object.keys((spec.document.webhooks ?? {}) as object)
  if (!declared.includes(LEAD_RECEIVED)) throw new Error(`spec: the webhooks section declares no ${LEAD_RECEIVED}`)
  return declared.filter((type) => type !== TEST_EVENT)
}

export function leadReceived(lead: NewLead): NewEvent {
  const body: LeadReceivedEvent = { type: LEAD_RECEIVED, timestamp: lead.received_at, data: logEntry(lead) }
  return { id: newEventId(), type: body.type, payload: JSON.stringify(body), created_at: lead.received_at, lead_id: lead.id }
}

/** The erasure of a lead: its id, when and why, nothing personal. Its lead_id is the lead's. */
export function leadErased(leadId: string, erasedAt: string, reason: ErasureReason): NewEvent {
  const body: LeadErasedEvent = { type: LEAD_ERASED, timestamp: erasedAt, data: { id: leadId, erased_at: erasedAt, reason } }
  return { id: newEventId(), type: body.type, payload: JSON.stringify(body), created_at: erasedAt, lead_id: leadId }
}

export function webhookTest(endpointId: string, at: Date): NewEvent {
  const body: WebhookTestEvent = { type: TEST_EVENT, timestamp: at.toISOString(), data: { endpoint_id: endpointId } }
  return { id: newEventId(), type: body.type, payload: JSON.stringify(body), created_at: body.timestamp, lead_id: null }
}
