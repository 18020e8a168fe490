// A delivery channel: how one due delivery reaches an endpoint of its kind. The worker leases
// endpoints, schedules, records and logs; a channel only makes the attempt and says what came of
// it. `webhook` (signed HTTP, http-channel.ts) is this plugin's; `email` is features/email's.
import type { DueDelivery, Endpoint } from './repository.js'

export type Attempted =
  /** Delivered; the receiver's answer (`200`, `SMTP 250`). */
  | { delivered: string }
  /** Failed: tried again on the schedule, or kept as a dead letter at once when `permanent`. */
  | { failed: string; permanent?: boolean }
  /** The receiver asked to be sent nothing more (410 Gone): the endpoint is disabled. */
  | { gone: string }
  /** Not attempted: this server's configuration holds it back (the reason says which setting). */
  | { held: string }

export interface Channel {
  /**
   * One attempt, at most the delivery timeout. Rejects with Interrupted when `signal` aborts it
   * (shutdown): the attempt then counts as not made.
   */
  deliver(endpoint: Endpoint, delivery: DueDelivery, signal: AbortSignal): Promise<Attempted>
  /** Releases what the channel holds (connections), once the worker has stopped. */
  close?(): Promise<void>
}

/** An attempt cut short by the worker's shutdown: not an attempt, the delivery stays pending. */
export class Interrupted extends Error {}

/** Held back by the server's configuration: the outcome a delivery and the status show. */
export const held = (why: string): { held: string } => ({ held: `held: ${why}` })
