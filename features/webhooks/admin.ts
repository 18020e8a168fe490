// What an operator does with endpoints (scripts/webhooks.ts, and tests): add one (its URL checked
// by the safety rules, its events against the spec), rotate its secret with a grace period, send
// it a test event, find what to replay (an event by its id, or a lead's events by the lead id).
// Nothing here sends: the delivery worker of a running instance does.
import { randomBytes } from 'node:crypto'
import { LEAD_ERASED, LEAD_RECEIVED, webhookTest } from './events.js'
import { EMAIL_ENDPOINT_ID, type WebhooksRepository } from './repository.js'
import { parseTarget, resolveTarget } from './safety.js'
import { newSigningSecret } from './signing.js'

export interface WebhookAdmin {
  repo: WebhooksRepository
  allowPrivate: boolean
  /** The event types endpoints may subscribe to (the spec's webhooks). */
  eventTypes: readonly string[]
}

export interface AddedEndpoint {
  endpoint_id: string
  secret: string
  events: string[]
}

const newEndpointId = (): string => `we_${randomBytes(8).toString('hex')}`

/**
 * The events an endpoint subscribes to: those named (default lead.received). An endpoint that
 * receives leads also hears of their erasure (GDPR art. 19: a controller tells the recipients it
 * gave personal data to), so lead.received always brings lead.erased with it.
 */
export function checkEvents(events: string[], known: readonly string[]): string[] {
  const unknown = events.filter((e) => !known.includes(e))
  if (unknown.length > 0) throw new Error(`unknown event type ${unknown.join(', ')}; event types are ${known.join(', ')}`)
  const named = events.length === 0 ? [LEAD_RECEIVED] : events
  const erased = named.includes(LEAD_RECEIVED) && known.includes(LEAD_ERASED) ? [LEAD_ERASED] : []
  return [...new Set([...named, ...erased])]
}

export async function addEndpoint(admin: WebhookAdmin, opts: { url: string; events?: string[] }, now = new Date()): Promise<AddedEndpoint> {
  const events = checkEvents(opts.events ?? [], admin.eventTypes)
  const target = parseTarget(opts.url, admin.allowPrivate)
  await resolveTarget(target, admin.allowPrivate)
  const added = { endpoint_id: newEndpointId(), secret: newSigningSecret(), events }
  await admin.repo.addEndpoint({
    id: added.endpoint_id,
    url: target.toString(),
    events: events.join(' '),
    secret: added.secret,
    created_at: now.toISOString(),
  })
  return added
}

/** A new secret for the endpoint; the old one also signs until the grace period ends. */
export async function rotateSecret(
  admin: WebhookAdmin,
  id: string,
  graceMs: number,
  now = new Date(),
): Promise<{ secret: string; previous_until: string } | undefined> {
  if (id === EMAIL_ENDPOINT_ID) throw new Error('the email channel signs nothing: it has no secret to rotate')
  const secret = newSigningSecret()
  const previousUntil = new Date(now.getTime() + graceMs).toISOString()
  return (await admin.repo.rotateSecret(id, secret, previousUntil)) ? { secret, previous_until: previousUntil } : undefined
}

/** Queues a webhook.test event for the endpoint; its event id. */
export async function sendTest(admin: WebhookAdmin, id: string, now = new Date()): Promise<string | undefined> {
  const endpoint = await admin.repo.findEndpoint(id)
  if (!endpoint) return undefined
  if (endpoint.disabled_at) {
    throw new Error(`endpoint ${id} is disabled (${endpoint.disabled_reason}): enable it first (npm run webhooks -- enable ${id})`)
  }
  const event = webhookTest(id, now)
  await admin.repo.addEventFor(id, event)
  return event.id
}

/**
 * The events an id names: an event (`msg_…`, its webhook-id), or every event about a lead (by
 * the lead id, webhook_events.lead_id). Throws, saying what it wants, when it names neither.
 */
export async function eventsNamed(repo: WebhooksRepository, id: string): Promise<string[]> {
  if (await repo.eventExists(id)) return [id]
  const ofLead = await repo.eventsOfLead(id)
  if (ofLead.length > 0) return ofLead
  throw new Error(
    `no event ${id}: give an event's webhook-id (msg_…, as status lists dead letters and receivers see it in the webhook-id header) or the id of a stored lead`,
  )
}
