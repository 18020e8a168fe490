// What the studio does with a person's data on request and over time: access (everything held
// about an address), erasure (the leads and every copy, announced downstream, cleared from the
// files), and retention (leads and sent payloads kept no longer than configured). Used by the
// operator CLI (scripts/leads.ts) and by the server's hourly retention check (index.ts).

import { emailAddressProblem } from '../../lib/email-address.js'
import type { Store } from '../../plugins/store/open.js'
import { type LeadLogEntry, logEntry } from '../leads/log-entry.js'
import type { ErasureReason } from '../webhooks/events.js'
import { type LeadDelivery, leadDeliveries } from '../webhooks/outbox.js'
import { WebhooksRepository } from '../webhooks/repository.js'
import { type Erasure, PrivacyRepository } from './repository.js'
import { type ScrubOptions, scrub } from './scrub.js'

/** Leads erased per transaction: a batch commits whole or not at all. */
export const ERASE_BATCH = 100
const DAY_MS = 24 * 60 * 60 * 1000

/** The answer to an access request (GDPR art. 15): machine-readable, handed over as it is. */
export interface AccessReport {
  email: string
  exported_at: string
  /** Each lead with all its stored fields, how and when it arrived, consent, and where it was sent. */
  leads: (Omit<LeadLogEntry, 'source' | 'consented_at'> & {
    /** null for a lead stored before the source was recorded. */
    source: LeadLogEntry['source'] | null
    consented_at: string | null
    deliveries: Omit<LeadDelivery, 'lead_id'>[]
  })[]
  /** Leads of this address that were erased: when and why (nothing else is kept). */
  erased: Erasure[]
}

export interface RetentionPolicy {
  /** Leads received more than this many days ago are erased; 0 keeps them forever. */
  leadsDays: number
  /** Outbox events are deleted this many days after their last attempt (never while pending). */
  payloadDays: number
}

export interface RetentionResult {
  erased: number
  events: number
  scrubbed: number
}

/** An access or erasure request for something no lead can have as its address. */
export class NotAnAddress extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'NotAnAddress'
  }
}

/**
 * The address of an access or erasure request, spaces around it dropped, held to what the spec
 * stores (ASCII: lib/email-address.ts), as a submitted address is before intake stores it. A
 * look-alike (the Kelvin sign for a K) or an invisible character in it is refused, saying which
 * character, never matched to another address.
 */
export function requestedAddress(email: string): string {
  const address = email.trim()
  const problem = emailAddressProblem(address)
  if (problem) throw new NotAnAddress(problem)
  return address
}

/** The cut-off of a retention period: leads received strictly before it are past the period. */
export const cutoffOf = (now: Date, days: number): string => new Date(now.getTime() - days * DAY_MS).toISOString()

export class Privacy {
  readonly repo: PrivacyRepository
  private readonly webhooks: WebhooksRepository

  constructor(
    private readonly store: Pick<Store, 'db' | 'dialect' | 'values' | 'location'>,
    /** The key of the erasure records' address hashes (the server's pepper). */
    hashKey: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.repo = new PrivacyRepository(store, hashKey)
    this.webhooks = new WebhooksRepository(store.db, store.dialect)
  }

  async exportEmail(requested: string): Promise<AccessReport> {
    const email = requestedAddress(requested)
    const leads = await this.repo.leadsByEmail(email)
    const deliveries = await leadDeliveries(
      this.store.db,
      leads.map((l) => l.id),
    )
    return {
      email,
      exported_at: this.now().toISOString(),
      leads: leads.map((lead) => ({
        ...logEntry(lead),
        source: lead.source ?? null,
        consented_at: lead.consented_at ?? null,
        deliveries: deliveries.filter((d) => d.lead_id === lead.id).map(({ lead_id: _, ...d }) => d),
      })),
      erased: await this.repo.erasures({ email }),
    }
  }

  /** Erases these leads in batches, one transaction each; the ids erased. */
  private async eraseIds(ids: readonly string[], reason: ErasureReason): Promise<string[]> {
    const erased: string[] = []
    for (let i = 0; i < ids.length; i += ERASE_BATCH) {
      erased.push(...(await this.repo.eraseBatch(ids.slice(i, i + ERASE_BATCH), reason, this.now().toISOString())))
    }
    return erased
  }

  /** Erases every lead of the address (ASCII letters in either case), at the person's request. */
  async eraseEmail(requested: string): Promise<string[]> {
    const leads = await this.repo.leadsByEmail(requestedAddress(requested))
    return this.eraseIds(
      leads.map((l) => l.id),
      'request',
    )
  }

  async eraseId(id: string): Promise<string[]> {
    return this.eraseIds([id], 'request')
  }

  /** Erases every lead received strictly before `cutoff`. */
  async eraseBefore(cutoff: string, reason: ErasureReason): Promise<string[]> {
    const erased: string[] = []
    for (;;) {
      const ids = await this.repo.idsReceivedBefore(cutoff, ERASE_BATCH)
      if (ids.length === 0) return erased
      // Ids another process erased meanwhile are skipped, and are not selected again.
      erased.push(...(await this.repo.eraseBatch(ids, reason, this.now().toISOString())))
    }
  }

  /** Clears erased bytes from the SQLite files (scrub.ts); nothing to do on PostgreSQL. */
  async scrubFiles(options: ScrubOptions = {}): Promise<number> {
    if (this.store.dialect !== 'sqlite') return 0
    return scrub(this.store.db, this.store.location, this.repo, { now: this.now, ...options })
  }

  /** Deletes outbox events past the payload retention, in batches; how many. */
  async sweepPayloads(cutoff: string): Promise<number> {
    let total = 0
    for (;;) {
      const n = await this.webhooks.sweepEvents(cutoff, 500)
      total += n
      if (n < 500) return total
    }
  }

  /** One retention pass: old leads erased (as `erase` does), old payloads deleted, files cleared. */
  async applyRetention(policy: RetentionPolicy, scrubOptions: ScrubOptions = {}): Promise<RetentionResult> {
    const now = this.now()
    const erased = policy.leadsDays > 0 ? (await this.eraseBefore(cutoffOf(now, policy.leadsDays), 'retention')).length : 0
    const events = await this.sweepPayloads(cutoffOf(now, policy.payloadDays))
    const scrubbed = await this.scrubFiles(scrubOptions)
    return { erased, events, scrubbed }
  }
}
