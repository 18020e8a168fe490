// Emailed sign-in codes: 6 digits, single use, 10 minutes, 5 tries. The page answers the same
// whether or not the address is staff's: a row is kept either way (only a hash of the address),
// and an address that is not staff's gets no email. Budgets per address and per client address
// count these rows, so they hold across instances.
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Database } from '../../plugins/store/schema.js'
import { normalEmail, type StaffRow } from './accounts.js'

export const CODE_TTL_MS = 10 * 60_000
export const CODE_TRIES = 5
/** Codes asked in an hour for one address, and from one client address. */
export const CODES_PER_ADDRESS = 5
export const CODES_PER_CLIENT = 20
const HOUR = 3600_000

const iso = (ms: number) => new Date(ms).toISOString()
const emailHash = (email: string) =>
  createHash('sha256')
    .update(`staff-email:${normalEmail(email)}`)
    .digest('base64url')
const codeHash = (id: string, code: string) => createHash('sha256').update(`${id}:${code}`).digest()

export type Issued = { codeId: string; code: string } | { refused: 'budget' }

export type Checked = { staffId: string } | { refused: 'wrong' | 'spent' }

export class SignInCodes {
  constructor(private readonly db: Kysely<Database>) {}

  /** A code for this address (sent by the caller only when `staff` is set), or a refusal when a budget is spent. */
  async issue(email: string, staff: StaffRow | undefined, from: string, now = Date.now()): Promise<Issued> {
    const hash = emailHash(email)
    const since = iso(now - HOUR)
    const count = async (column: 'email_hash' | 'requested_from', value: string) =>
      Number(
        (
          await this.db
            .selectFrom('staff_codes')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where(column, '=', value)
            .where('created_at', '>', since)
            .executeTakeFirstOrThrow()
        ).n,
      )
    if ((await count('email_hash', hash)) >= CODES_PER_ADDRESS || (await count('requested_from', from)) >= CODES_PER_CLIENT) {
      return { refused: 'budget' }
    }
    const codeId = randomBytes(16).toString('base64url')
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0')
    await this.db
      .insertInto('staff_codes')
      .values({
        id: codeId,
        email_hash: hash,
        staff_id: staff?.id ?? null,
        code_hash: codeHash(codeId, code).toString('base64url'),
        requested_from: from,
        tries: 0,
        created_at: iso(now),
        expires_at: iso(now + CODE_TTL_MS),
        used_at: null,
      })
      .execute()
    return { codeId, code }
  }

  /** Checks a code: right once, within its time and tries; every try counts. */
  async check(codeId: string, code: string, now = Date.now()): Promise<Checked> {
    const row = await this.db.selectFrom('staff_codes').selectAll().where('id', '=', codeId).executeTakeFirst()
    if (!row || row.used_at !== null || row.expires_at <= iso(now) || row.tries >= CODE_TRIES) return { refused: 'spent' }
    const counted = await this.db
      .updateTable('staff_codes')
      .set({ tries: row.tries + 1 })
      .where('id', '=', codeId)
      .where('tries', '=', row.tries)
      .where('used_at', 'is', null)
      .executeTakeFirst()
    if (Number(counted.numUpdatedRows) === 0) return { refused: 'spent' }
    const given = codeHash(codeId, /^[0-9]{6}$/.test(code) ? code : 'x')
    const right = timingSafeEqual(given, Buffer.from(row.code_hash, 'base64url'))
    if (!right || row.staff_id === null) return { refused: row.tries + 1 >= CODE_TRIES ? 'spent' : 'wrong' }
    const used = await this.db
      .updateTable('staff_codes')
      .set({ used_at: iso(now) })
      .where('id', '=', codeId)
      .where('used_at', 'is', null)
      .executeTakeFirst()
    return Number(used.numUpdatedRows) === 1 ? { staffId: row.staff_id } : { refused: 'spent' }
  }
}
