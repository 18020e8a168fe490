// The events the studio sends: their types (the keys of the spec's `webhooks:` section), their
// ids, and their bodies (typed from the spec, built from what is stored: a lead's body is its log
// entry, so a field added to the spec's LeadFields is sent with no code change).
import { v7 as uuidv7 } from 'uuid'
import type { components } from '../../generated/openapi.js'
import { logEntry, type NewLead } from '../leads/index.js'
import type { Spec } from '../spec/document.js'

export type LeadReceivedEvent = components['schemas']['LeadReceivedEvent']
export type WebhookTestEvent = components['schemas']['WebhookTestEvent']

export const LEAD_RECEIVED: LeadReceivedEvent['type'] = 'lead.received'
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
  return { id: newEventId(), type: body.type, payload: JSON.stringify(body), created_at: lead.received_at }
}

export function webhookTest(endpointId: string, at: Date): NewEvent {
  const body: WebhookTestEvent = { type: TEST_EVENT, timestamp: at.toISOString(), data: { endpoint_id: endpointId } }
  return { id: newEventId(), type: body.type, payload: JSON.stringify(body), created_at: body.timestamp }
}
