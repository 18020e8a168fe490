// Creating, rotating and revoking clients and API keys: shared by the CLI and the bootstrap.
import type { Store } from '../store/open.js'
import { ALL_SCOPES } from './rules.js'
import { hashSecret, newApiKeyId, newClientId, newSecret } from './secrets.js'

export interface IssuedCredentials {
  client_id: string
  client_secret: string
  name: string
  scopes: string[]
}

export function checkScopes(scopes: string[]): string[] {
  const unknown = scopes.filter((s) => !ALL_SCOPES.includes(s))
  if (unknown.length > 0) throw new Error(`unknown scope ${unknown.join(', ')}; scopes are ${ALL_SCOPES.join(', ')}`)
  if (scopes.length === 0) throw new Error(`give at least one scope of ${ALL_SCOPES.join(', ')}`)
  return [...new Set(scopes)]
}

export async function createClient(
  store: Store,
  pepper: string,
  opts: { name: string; scopes: string[]; id?: string; secret?: string },
): Promise<IssuedCredentials> {
  const scopes = checkScopes(opts.scopes)
  const id = opts.id ?? newClientId()
  const secret = opts.secret ?? newSecret()
  await store.clients.create({
    id,
    name: opts.name,
    scopes: scopes.join(' '),
    secret_hash: hashSecret(pepper, secret),
    created_at: new Date().toISOString(),
    revoked_at: null,
  })
  return { client_id: id, client_secret: secret, name: opts.name, scopes }
}

/** A new secret for an active client; the old one stops working at once. */
export async function rotateClient(store: Store, pepper: string, id: string): Promise<string | undefined> {
  const secret = newSecret()
  return (await store.clients.rotate(id, hashSecret(pepper, secret))) ? secret : undefined
}

export async function createApiKey(
  store: Store,
  pepper: string,
  opts: { name: string; scopes: string[] },
): Promise<{ id: string; api_key: string; scopes: string[] }> {
  const scopes = checkScopes(opts.scopes)
  const id = newApiKeyId()
  const key = `sk_${newSecret()}`
  await store.clients.createApiKey({
    id,
    name: opts.name,
    scopes: scopes.join(' '),
    key_hash: hashSecret(pepper, key),
    created_at: new Date().toISOString(),
    revoked_at: null,
  })
  return { id, api_key: key, scopes }
}
