// Lead intake: the one way a lead is stored, shared by submitLead and the MCP tool
// request_consultation (same normalisation, same idempotency, same store, same receipt).
// It never names a field: whatever the spec's LeadFields hold is normalised, hashed and stored.
import { createHash } from 'node:crypto'
import type { components } from '../../generated/openapi.js'
import { AppError } from '../../plugins/errors/codes.js'
import { uuidv7 } from '../../plugins/store/ids.js'
import type { LeadSource } from '../../plugins/store/schema.js'
import type { LeadFields, LeadsRepository, NewLead } from './repository.js'
import type { LeadWriter } from './writer.js'

export type LeadReceipt = components['schemas']['LeadReceipt']

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000

/** Keys created before this instant have expired. */
export const idempotencyCutoff = (now: Date = new Date()): string => new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS).toISOString()

export interface Submitter {
  /** The submitting client, or null when anonymous. */
  clientId: string | null
  /** Whose idempotency keys these are: `client:<id>`, or `addr:<ip>` when anonymous. */
  owner: string
  /** How the lead arrives: `api` (submitLead with a token), `form` (anonymous submitLead), `agent` (MCP). */
  source?: LeadSource
  /** The person agreed to be contacted, now: recorded as the lead's `consented_at`. */
  consent?: boolean
}

/**
 * How a text field of the spec's LeadFields is normalised (its `x-text`): `line` (the default)
 * keeps it on one line, `text` keeps its line breaks and tabs.
 */
export type TextKind = 'line' | 'text'

/**
 * Removed from every text field: control characters other than whitespace (C0, DEL, C1), and
 * invisible formatting characters that change how text reads without being seen: the
 * bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F,
 * U+202A–U+202E, U+2066–U+2069), the zero-width space U+200B, the word joiner U+2060 and the BOM
 * U+FEFF. The zero-width joiners U+200C and U+200D stay: Persian and Indic names and emoji need them.
 */
const INVISIBLE = /(?![\t\n\v\f\r])\p{Cc}|[\u061C\u200B\u200E\u200F\u202A-\u202E\u2060\u2066-\u2069\uFEFF]/gu
/** Line breaks of every kind, as one `\n` in a `text` field. */
const LINE_BREAK = /\r\n?|[\u2028\u2029]/gu
/** Whitespace a `text` field does not keep: vertical tab and form feed. */
const ODD_SPACE = /[\v\f]/gu

/** One field's text as stored (see LeadFields in the spec). */
export function normaliseText(value: string, kind: TextKind = 'line'): string {
  const visible = value.replace(INVISIBLE, '')
  if (kind === 'line') return visible.replace(/\s+/gu, ' ').trim()
  return visible.replace(LINE_BREAK, '\n').replace(ODD_SPACE, ' ').trim()
}

/** Each LeadFields property's `x-text` (properties without one are `line`). */
export function textKinds(leadFields: { properties?: Record<string, unknown> }): Record<string, TextKind> {
  const kinds: Record<string, TextKind> = {}
  for (const [name, schema] of Object.entries(leadFields.properties ?? {})) {
    const kind = (schema as { 'x-text'?: unknown })['x-text']
    if (kind !== undefined && kind !== 'line' && kind !== 'text')
      throw new Error(`spec: LeadFields.${name} has x-text ${String(kind)}; use line or text`)
    kinds[name] = kind ?? 'line'
  }
  return kinds
}

/**
 * The lead as stored: every text field normalised by its kind (surrounding spaces, control and
 * invisible characters are never meaningful), and a field left blank not stored at all (only
 * optional fields can be: the schema refuses a blank required one).
 */
export function normalise(lead: LeadFields, kinds: Record<string, TextKind> = {}): LeadFields {
  const fields = Object.entries(lead).map(([k, v]) => [k, typeof v === 'string' ? normaliseText(v, kinds[k]) : v] as const)
  return Object.fromEntries(fields.filter(([, v]) => v !== '')) as LeadFields
}

/** The idempotency hash of a normalised lead: every field, in a key order that does not depend on the sender's. */
export function leadHash(lead: LeadFields): string {
  const canonical = JSON.stringify(Object.entries(lead).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  return createHash('sha256').update(canonical).digest('hex')
}

export class LeadIntake {
  /** Requests with a key whose lead is being written now (a retry racing the original). */
  private readonly inFlight = new Map<string, { hash: string; receipt: Promise<LeadReceipt> }>()

  constructor(
    private readonly leads: LeadsRepository,
    private readonly writer: LeadWriter,
    private readonly now: () => Date = () => new Date(),
    /** How each field's text is normalised (the spec's `x-text`, textKinds). */
    private readonly kinds: Record<string, TextKind> = {},
  ) {}

  cutoff(): string {
    return idempotencyCutoff(this.now())
  }

  /** Stores a lead already validated against the spec's Lead schema; resolves after the commit. */
  async submit(input: LeadFields, by: Submitter, idempotencyKey?: string): Promise<LeadReceipt> {
    const lead = normalise(input, this.kinds)
    if (idempotencyKey === undefined) return this.store(lead, by)

    const hash = leadHash(lead)
    const slot = `${by.owner}\u0000${idempotencyKey}`
    const running = this.inFlight.get(slot)
    if (running) {
      if (running.hash !== hash) throw conflict()
      return running.receipt
    }
    const receipt = this.storeOnce(lead, by, idempotencyKey, hash)
    this.inFlight.set(slot, { hash, receipt })
    try {
      return await receipt
    } finally {
      this.inFlight.delete(slot)
    }
  }

  private async storeOnce(lead: LeadFields, by: Submitter, key: string, hash: string): Promise<LeadReceipt> {
    const earlier = await this.replay(by.owner, key, hash)
    if (earlier) return earlier
    const row = this.newRow(lead, by)
    const stored = await this.writer.write(row, {
      owner: by.owner,
      key,
      body_hash: hash,
      lead_id: row.id,
      created_at: row.received_at,
    })
    if (stored) return receiptOf(row)
    // Another instance claimed the key between our read and our commit: answer as it did.
    const winner = await this.replay(by.owner, key, hash)
    if (!winner)
      throw new AppError('service_unavailable', 'The lead could not be stored; please retry.', 'retry with the same Idempotency-Key')
    return winner
  }

  private async replay(owner: string, key: string, hash: string): Promise<LeadReceipt | undefined> {
    const rec = await this.leads.findIdempotency(owner, key, this.cutoff())
    if (!rec) return undefined
    if (rec.body_hash !== hash) throw conflict()
    return { id: rec.lead_id, received_at: rec.received_at, status: 'received' }
  }

  private async store(lead: LeadFields, by: Submitter): Promise<LeadReceipt> {
    const row = this.newRow(lead, by)
    await this.writer.write(row)
    return receiptOf(row)
  }

  /**
   * A lead's id is a UUIDv7 (RFC 9562): random, but in time order, so the ids of a commit's leads
   * go to the end of the id index, one page for the lot, not one page each; a commit writes
   * (and fsyncs) that much less.
   */
  private newRow(fields: LeadFields, by: Submitter): NewLead {
    const receivedAt = this.now().toISOString()
    return {
      id: uuidv7(),
      fields,
      received_at: receivedAt,
      client_id: by.clientId,
      ...(by.source && { source: by.source }),
      ...(by.consent === true && { consented_at: receivedAt }),
    }
  }
}

function receiptOf(row: { id: string; received_at: string }): LeadReceipt {
  return { id: row.id, received_at: row.received_at, status: 'received' }
}

function conflict(): AppError {
  return new AppError(
    'idempotency_conflict',
    undefined,
    'use a new Idempotency-Key for a different lead, or resend exactly the same body to get the first receipt',
  )
}
