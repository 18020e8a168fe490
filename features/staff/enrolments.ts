// One-time enrolment links: for a person who cannot receive an emailed code (no SMTP_URL), or on
// the operator's demand, `npm run staff -- add|enrol` prints `{PUBLIC_BASE_URL}/oauth/enrol/{token}`
// for the operator to hand over. Opening it lets the person add a passkey on their device
// (enrol.ts); only a verified passkey uses it up. A link works once, for 7 days; only a SHA-256 of
// its token is kept (the token has 256 bits: a fast hash is enough, and one indexed lookup finds
// it). A new link of a person voids their earlier unused ones; removing the person voids all.
import { createHash, randomBytes } from 'node:crypto'
import type { Kysely, Transaction } from 'kysely'
import type { Database } from '../../plugins/store/schema.js'
import type { StaffRow } from './accounts.js'

export const ENROL_TTL_MS = 7 * 24 * 3600_000
export const ENROL_DAYS = ENROL_TTL_MS / (24 * 3600_000)
/** Where a link points: the path of the enrolment page. */
export const enrolPath = (token: string): string => `/oauth/enrol/${token}`
/** What a token looks like (32 random bytes, base64url): anything else is refused without a lookup. */
export const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/

const iso = (ms: number) => new Date(ms).toISOString()
const tokenHash = (token: string) => createHash('sha256').update(`staff-enrol:${token}`).digest('base64url')

export interface Issued {
  token: string
  enrolmentId: string
  expiresAt: string
}

/** A link that may be used: its enrolment and the person it enrols. */
export interface Usable {
  enrolmentId: string
  staff: StaffRow
}

export class StaffEnrolments {
  constructor(private readonly db: Kysely<Database>) {}

  /** A fresh link for this person; their earlier unused links stop working. */
  async issue(staffId: string, now = Date.now()): Promise<Issued> {
    const token = randomBytes(32).toString('base64url')
    const row = {
      id: `en_${randomBytes(12).toString('base64url')}`,
      token_hash: tokenHash(token),
      staff_id: staffId,
      created_at: iso(now),
      expires_at: iso(now + ENROL_TTL_MS),
      used_at: null,
    }
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('staff_enrolments').where('staff_id', '=', staffId).where('used_at', 'is', null).execute()
      await trx.insertInto('staff_enrolments').values(row).execute()
    })
    return { token, enrolmentId: row.id, expiresAt: row.expires_at }
  }

  /**
   * The enrolment this token opens, when it is known, unused, within its 7 days and its person is
   * still staff: one indexed lookup (the token's hash, joined to the person by id). Undefined
   * otherwise, the same for every reason (no oracle).
   */
  async usable(token: string, now = Date.now()): Promise<Usable | undefined> {
    if (!TOKEN_SHAPE.test(token)) return undefined
    const row = await this.db
      .selectFrom('staff_enrolments as e')
      .innerJoin('staff as s', 's.id', 'e.staff_id')
      .select(['e.id as enrolment_id', 'e.expires_at', 'e.used_at', 's.id', 's.email', 's.name', 's.created_at'])
      .where('e.token_hash', '=', tokenHash(token))
      .executeTakeFirst()
    if (!row || row.used_at !== null || row.expires_at <= iso(now)) return undefined
    return { enrolmentId: row.enrolment_id, staff: { id: row.id, email: row.email, name: row.name, created_at: row.created_at } }
  }

  /**
   * Uses the enrolment up, within `trx`, if nobody did first (two tabs: one wins) and it has not
   * expired meanwhile; true when this call used it.
   */
  async consume(trx: Transaction<Database>, enrolmentId: string, now = Date.now()): Promise<boolean> {
    const res = await trx
      .updateTable('staff_enrolments')
      .set({ used_at: iso(now) })
      .where('id', '=', enrolmentId)
      .where('used_at', 'is', null)
      .where('expires_at', '>', iso(now))
      .executeTakeFirst()
    return Number(res.numUpdatedRows) === 1
  }
}
