// oidc-provider's storage on our store (both dialects): one row per record in `oidc_models`
// (model, id), its payload as JSON, with the columns the provider looks records up by (grant,
// interaction uid) and the ones the operator's commands need (the person, the client). Expired
// rows read as absent and are swept by the staff plugin.

import type { Kysely } from 'kysely'
import type { Adapter, AdapterPayload } from 'oidc-provider'
import type { Database } from '../../plugins/store/schema.js'

const iso = (ms: number): string => new Date(ms).toISOString()

/** A class oidc-provider constructs once per model name; `documentClient` answers for clients named by a metadata document's URL (cimd.ts). */
export function storeAdapter(
  db: Kysely<Database>,
  documentClient: (id: string) => Promise<Record<string, unknown> | undefined>,
  isDocumentUrl: (id: string) => boolean,
): new (
  model: string,
) => Adapter {
  return class StoreAdapter implements Adapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
      const now = Date.now()
      const row = {
        payload: JSON.stringify(payload),
        grant_id: payload.grantId ?? null,
        uid: payload.uid ?? null,
        account_id: payload.accountId ?? null,
        client_id: payload.clientId ?? null,
        expires_at: expiresIn ? iso(now + expiresIn * 1000) : null,
      }
      await db
        .insertInto('oidc_models')
        .values({ model: this.model, id, created_at: iso(now), consumed_at: null, ...row })
        .onConflict((oc) => oc.columns(['model', 'id']).doUpdateSet(row))
        .execute()
    }

    private async one(where: 'id' | 'uid', value: string): Promise<AdapterPayload | undefined> {
      const row = await db
        .selectFrom('oidc_models')
        .select(['payload', 'expires_at', 'consumed_at'])
        .where('model', '=', this.model)
        .where(where, '=', value)
        .executeTakeFirst()
      if (!row || (row.expires_at !== null && row.expires_at <= iso(Date.now()))) return undefined
      const payload = JSON.parse(row.payload) as AdapterPayload
      if (row.consumed_at !== null) payload.consumed = Math.floor(Date.parse(row.consumed_at) / 1000)
      return payload
    }

    find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client' && isDocumentUrl(id)) return documentClient(id) as Promise<AdapterPayload | undefined>
      return this.one('id', id)
    }

    findByUid(uid: string): Promise<AdapterPayload | undefined> {
      return this.one('uid', uid)
    }

    async findByUserCode(): Promise<undefined> {
      return undefined
    }

    async consume(id: string): Promise<void> {
      await db
        .updateTable('oidc_models')
        .set({ consumed_at: iso(Date.now()) })
        .where('model', '=', this.model)
        .where('id', '=', id)
        .execute()
    }

    async destroy(id: string): Promise<void> {
      await db.deleteFrom('oidc_models').where('model', '=', this.model).where('id', '=', id).execute()
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await revokeGrant(db, grantId)
    }
  }
}

/** How long a client registered by DCR is kept without any grant (anyone may register one). */
export const UNUSED_CLIENT_DAYS = 7

/** Removes what has expired (codes, enrolment links, interactions, sessions, grants, refresh tokens), and registered clients nobody allowed. */
export async function sweepExpired(db: Kysely<Database>, now = Date.now()): Promise<void> {
  await db.deleteFrom('oidc_models').where('expires_at', '<=', iso(now)).execute()
  await db
    .deleteFrom('oidc_models')
    .where('model', '=', 'Client')
    .where('created_at', '<=', iso(now - UNUSED_CLIENT_DAYS * 24 * 3600_000))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(selectFrom('oidc_models as g').select('g.id').where('g.model', '=', 'Grant').whereRef('g.client_id', '=', 'oidc_models.id')),
      ),
    )
    .execute()
  await db
    .deleteFrom('staff_codes')
    .where('created_at', '<=', iso(now - 24 * 3600_000))
    .execute()
  await db.deleteFrom('staff_enrolments').where('expires_at', '<=', iso(now)).execute()
}

/** Ends a grant: the grant itself and every token, code and refresh token issued under it. */
export async function revokeGrant(db: Kysely<Database>, grantId: string): Promise<number> {
  const res = await db
    .deleteFrom('oidc_models')
    .where((eb) => eb.or([eb('grant_id', '=', grantId), eb.and([eb('model', '=', 'Grant'), eb('id', '=', grantId)])]))
    .executeTakeFirst()
  return Number(res.numDeletedRows)
}
