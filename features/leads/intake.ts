// Lead intake: the one way a lead is stored, shared by submitLead and the MCP tool
// request_consultation (same normalisation, same idempotency, same store, same receipt).
// It never names a field: whatever the spec's LeadFields hold is normalised, hashed and stored.
import { createHash } from 'node:crypto'
import type { components } from '../../generated/openapi.js'
import { compileStrict, type ErrorObject, type ValidateFunction } from '../../lib/ajv.js'
import { cleanLine, cleanText } from '../../lib/text.js'
import { AppError } from '../../plugins/errors/codes.js'
import type { JsonSchema } from '../../plugins/spec/document.js'
import { uuidv7 } from '../../plugins/store/ids.js'
import type { LeadSource } from '../../plugins/store/schema.js'
import { validationError } from '../../plugins/validation/messages.js'
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
 * keeps it on one line, `text` keeps its line breaks and tabs. What either removes is lib/text.ts's
 * table, the one the email and the MCP texts use.
 */
export type TextKind = 'line' | 'text'

/** One field's text as stored (see LeadFields in the spec and lib/text.ts). */
export function normaliseText(value: string, kind: TextKind = 'line'): string {
  return kind === 'line' ? cleanLine(value) : cleanText(value)
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
 * What intake holds a lead to: how each field is cleaned (`x-text`), and the spec's LeadFields
 * schema itself, checked again on the cleaned lead. The request was valid as sent; what is
 * stored must be valid too: a name left with no letter once its invisible characters are gone
 * (`"\u0085"`, `"\u061C"`) is refused, never stored blank, whatever the pattern let through.
 */
export interface LeadRules {
  kinds: Record<string, TextKind>
  /** The spec's LeadFields, compiled; undefined: not checked again (tests of the writer alone). */
  validate?: ValidateFunction
}

export function leadRules(leadFields: JsonSchema): LeadRules {
  return { kinds: textKinds(leadFields as { properties?: Record<string, unknown> }), validate: compileStrict(leadFields) }
}

/** Every text field normalised by its kind; nothing dropped yet (the check sees a blank field as blank). */
function cleaned(lead: LeadFields, kinds: Record<string, TextKind>): LeadFields {
  return Object.fromEntries(Object.entries(lead).map(([k, v]) => [k, typeof v === 'string' ? normaliseText(v, kinds[k]) : v])) as LeadFields
}

/** An optional field left blank is not stored at all (a required one never gets here: LeadFields refuses it). */
const withoutBlanks = (lead: LeadFields): LeadFields => Object.fromEntries(Object.entries(lead).filter(([, v]) => v !== '')) as LeadFields

/**
 * The lead as stored: every text field normalised by its kind (surrounding spaces, control and
 * invisible characters are never meaningful), and an optional field left blank not stored at
 * all. Throws invalid_request, naming the field, when the cleaned lead is not valid LeadFields.
 */
export function normalise(lead: LeadFields, rules: LeadRules = { kinds: {} }): LeadFields {
  const clean = cleaned(lead, rules.kinds)
  if (rules.validate && !rules.validate(clean)) throw refusedOnceCleaned(lead, clean, rules.validate.errors ?? [])
  return withoutBlanks(clean)
}

function refusedOnceCleaned(sent: LeadFields, clean: LeadFields, errors: ErrorObject[]): AppError {
  const refusal = validationError(errors, 'body')
  const field = errors[0]?.instancePath.split('/')[1]
  if (field === undefined) return refusal
  const before = (sent as Record<string, unknown>)[field]
  const after = (clean as Record<string, unknown>)[field]
  const what =
    after === '' && before !== ''
      ? 'is empty once control and invisible characters are removed'
      : 'is invalid once control and invisible characters are removed and its spaces collapsed'
  return new AppError('invalid_request', `The field \`${field}\` ${what}.`, refusal.hint)
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
    /** How each field's text is normalised and checked once cleaned (the spec's LeadFields, leadRules). */
    private readonly rules: LeadRules = { kinds: {} },
  ) {}

  cutoff(): string {
    return idempotencyCutoff(this.now())
  }

  /** Stores a lead already validated against the spec's Lead schema; resolves after the commit. */
  async submit(input: LeadFields, by: Submitter, idempotencyKey?: string): Promise<LeadReceipt> {
    const lead = normalise(input, this.rules)
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
