// The studio's staff as the operator manages them (`npm run staff -- …`) and as the sign-in pages
// and the token checks read them: accounts, and their grants (a client a person allowed, with its
// refresh tokens: "sessions"). Removing a person ends every grant of theirs at once, and their
// access tokens stop at the next request (plugins/auth checks the person's standing).
import { randomBytes } from 'node:crypto'
import type { Kysely, Selectable } from 'kysely'
import type { Database, StaffTable } from '../../plugins/store/schema.js'
import { revokeGrant } from './adapter.js'

export type StaffRow = Selectable<StaffTable>

export interface StaffSession {
  grant_id: string
  staff_id: string
  client_id: string
  created_at: string
  expires_at: string | null
}

export const normalEmail = (email: string): string => email.trim().toLowerCase()

/** A valid-looking address: one @, no spaces, at most 254 characters. */
export const plausibleEmail = (email: string): boolean => email.length <= 254 && /^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/.test(email)

export class StaffAccounts {
  constructor(private readonly db: Kysely<Database>) {}

  async add(email: string, name: string | null, now = new Date()): Promise<StaffRow> {
    const row: StaffRow = {
      id: `st_${randomBytes(9).toString('base64url')}`,
      email: normalEmail(email),
      name,
      created_at: now.toISOString(),
    }
    await this.db.insertInto('staff').values(row).execute()
    return row
  }

  find(id: string): Promise<StaffRow | undefined> {
    return this.db.selectFrom('staff').selectAll().where('id', '=', id).executeTakeFirst()
  }

  findByEmail(email: string): Promise<StaffRow | undefined> {
    return this.db.selectFrom('staff').selectAll().where('email', '=', normalEmail(email)).executeTakeFirst()
  }

  /** By id or by address. */
  async resolve(who: string): Promise<StaffRow | undefined> {
    return who.includes('@') ? this.findByEmail(who) : this.find(who)
  }

  list(): Promise<StaffRow[]> {
    return this.db.selectFrom('staff').selectAll().orderBy('created_at').orderBy('id').execute()
  }

  /** Removes the person, their passkeys, codes and enrolment links, and every grant, session and token of theirs. */
  async remove(id: string): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const res = await trx.deleteFrom('staff').where('id', '=', id).executeTakeFirst()
      await trx.deleteFrom('staff_passkeys').where('staff_id', '=', id).execute()
      await trx.deleteFrom('staff_codes').where('staff_id', '=', id).execute()
      await trx.deleteFrom('staff_enrolments').where('staff_id', '=', id).execute()
      const grants = await trx.selectFrom('oidc_models').select('id').where('model', '=', 'Grant').where('account_id', '=', id).execute()
      for (const g of grants) await revokeGrant(trx, g.id)
      await trx.deleteFrom('oidc_models').where('account_id', '=', id).execute()
      return Number(res.numDeletedRows) > 0
    })
  }

  /** Grants that still stand: one per person and client they allowed. */
  async sessions(staffId?: string): Promise<StaffSession[]> {
    let q = this.db
      .selectFrom('oidc_models')
      .select(['id', 'account_id', 'client_id', 'created_at', 'expires_at'])
      .where('model', '=', 'Grant')
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', new Date().toISOString())]))
    if (staffId !== undefined) q = q.where('account_id', '=', staffId)
    const rows = await q.orderBy('created_at').execute()
    return rows.map((r) => ({
      grant_id: r.id,
      staff_id: r.account_id ?? '',
      client_id: r.client_id ?? '',
      created_at: r.created_at,
      expires_at: r.expires_at,
    }))
  }

  /** Ends one grant; false when there was none. */
  async revoke(grantId: string): Promise<boolean> {
    return (await revokeGrant(this.db, grantId)) > 0
  }
}
