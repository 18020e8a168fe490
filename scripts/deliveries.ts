// What the two delivery CLIs share (scripts/webhooks.ts, scripts/email.ts): the status table of
// endpoints and dead letters, and reading a replay request off the command line.
import { eventsNamed } from '../features/webhooks/admin.js'
import type { DeadLetter, EndpointStatus } from '../features/webhooks/reports.js'
import type { WebhooksRepository } from '../features/webhooks/repository.js'
import { parseRfc3339 } from '../lib/rfc3339.js'
import { UsageError } from './cli.js'

type Out = (text: string) => void

/** A duration in a few characters: 45s, 12m, 3h, 2d. */
function span(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000))
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : s < 172_800 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86_400)}d`
}

const ago = (since: string | null, now: Date): string => (since ? span(now.getTime() - Date.parse(since)) : '-')

/** When the next attempt is due: `now`, `in 25s`; `-` with nothing pending, or while disabled. */
function nextAttempt(e: EndpointStatus, now: Date): string {
  if (e.pending === 0 || !e.next_attempt_at) return '-'
  if (e.disabled_at) return '- (disabled)'
  const wait = Date.parse(e.next_attempt_at) - now.getTime()
  return wait <= 0 ? 'now' : `in ${span(wait)}`
}

const state = (e: EndpointStatus, now: Date): string =>
  e.disabled_at ? `disabled (${e.disabled_reason})` : e.failing_since ? `failing for ${ago(e.failing_since, now)}` : 'active'

/**
 * The last failure while it is current: the endpoint is failing, or has deliveries waiting or
 * dead since it failed. Once a delivery succeeds after it (failing_since cleared) it is history,
 * and the endpoint shows `-`.
 */
const lastFailure = (e: EndpointStatus, now: Date): string =>
  e.last_failure && e.failing_since ? `${e.last_failure} (${ago(e.last_failure_at, now)} ago)` : '-'

export function printStatus(out: Out, endpoints: EndpointStatus[], now: Date): void {
  if (endpoints.length === 0) {
    out('no endpoints')
    return
  }
  out(['endpoint', 'channel', 'state', 'pending', 'delivered', 'dead', 'oldest pending', 'next attempt', 'last failure', 'url'].join('\t'))
  for (const e of endpoints) {
    out(
      [
        e.id,
        e.kind,
        state(e, now),
        e.pending,
        e.delivered,
        e.dead,
        ago(e.oldest_pending, now),
        nextAttempt(e, now),
        lastFailure(e, now),
        e.url,
      ].join('\t'),
    )
  }
}

export function printDeadLetters(out: Out, dead: DeadLetter[], how: string): void {
  if (dead.length === 0) return
  out(`\ndead letters (${how}):`)
  for (const d of dead.slice(0, 50)) {
    out([d.event_id, d.endpoint_id, d.event_type, d.lead_id ?? '-', `${d.attempts} attempts`, d.last_outcome, d.last_attempt_at].join('\t'))
  }
  if (dead.length > 50) out('… and more: --dead queues them all again')
}

/**
 * Queues again what the command line names: an event (`msg_…`) or a lead (its id), every event
 * since a time, or every dead letter; to every endpoint subscribed, or only `endpointId`.
 * Returns how many deliveries were queued.
 */
export async function replayFromCommandLine(
  repo: WebhooksRepository,
  id: string | undefined,
  values: { since?: string | undefined; dead?: boolean | undefined },
  endpointId: string | undefined,
): Promise<number> {
  if ([id !== undefined, values.since !== undefined, values.dead === true].filter(Boolean).length !== 1) {
    throw new UsageError('give an event id (msg_…), a lead id, --since TIME or --dead (one of them)')
  }
  const now = new Date().toISOString()
  if (values.dead) return repo.replay({ dead: true }, now, endpointId)
  if (values.since !== undefined) {
    const since = parseRfc3339(values.since)
    if ('problem' in since) throw new UsageError(`--since ${since.problem}`)
    return repo.replay({ since: since.instant.toISOString() }, now, endpointId)
  }
  let queued = 0
  for (const eventId of await eventsNamed(repo, id as string)) queued += await repo.replay({ eventId }, now, endpointId)
  return queued
}
