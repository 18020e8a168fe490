// Creating, rotating and revoking clients and API keys: shared by the CLI and the bootstrap
// client a first start makes.
// Scopes are checked against the ones the spec declares (given by the caller).
import { join } from 'node:path'
import type { Config } from '../../config.js'
import { privateDir, privateFile, writePrivateFile } from '../store/private-files.js'
import type { ClientRow, ClientsRepository } from './clients.js'
import { hashSecret, newApiKeyId, newClientId, newSecret } from './secrets.js'

export interface IssuedCredentials {
  client_id: string
  client_secret: string
  name: string
  scopes: string[]
}

/** Where clients are kept, the hash key, and the scopes there are. */
export interface ClientAdmin {
  clients: ClientsRepository
  pepper: string
  scopes: readonly string[]
}

export function checkScopes(scopes: string[], known: readonly string[]): string[] {
  const unknown = scopes.filter((s) => !known.includes(s))
  if (unknown.length > 0) throw new Error(`unknown scope ${unknown.join(', ')}; scopes are ${known.join(', ')}`)
  if (scopes.length === 0) throw new Error(`give at least one scope of ${known.join(', ')}`)
  return [...new Set(scopes)]
}

/** A new client's row and credentials (the secret is given, or made). */
function newClient(
  { pepper, scopes: known }: ClientAdmin,
  opts: { name: string; scopes: string[]; id?: string; secret?: string },
): { row: ClientRow; credentials: IssuedCredentials } {
  const scopes = checkScopes(opts.scopes, known)
  const id = opts.id ?? newClientId()
  const secret = opts.secret ?? newSecret()
  return {
    row: {
      id,
      name: opts.name,
      scopes: scopes.join(' '),
      secret_hash: hashSecret(pepper, secret),
      secret_generation: 0,
      created_at: new Date().toISOString(),
      revoked_at: null,
    },
    credentials: { client_id: id, client_secret: secret, name: opts.name, scopes },
  }
}

export async function createClient(
  admin: ClientAdmin,
  opts: { name: string; scopes: string[]; id?: string; secret?: string },
): Promise<IssuedCredentials> {
  const { row, credentials } = newClient(admin, opts)
  await admin.clients.create(row)
  return credentials
}

/** A new secret for an active client: the old one stops at once, its tokens within the status TTL. */
export async function rotateClient({ clients, pepper }: ClientAdmin, id: string): Promise<string | undefined> {
  const secret = newSecret()
  return (await clients.rotate(id, hashSecret(pepper, secret))) ? secret : undefined
}

export async function createApiKey(
  { clients, pepper, scopes: known }: ClientAdmin,
  opts: { name: string; scopes: string[] },
): Promise<{ id: string; api_key: string; scopes: string[] }> {
  const scopes = checkScopes(opts.scopes, known)
  const id = newApiKeyId()
  const key = `sk_${newSecret()}`
  await clients.createApiKey({
    id,
    name: opts.name,
    scopes: scopes.join(' '),
    key_hash: hashSecret(pepper, key),
    created_at: new Date().toISOString(),
    revoked_at: null,
  })
  return { id, api_key: key, scopes }
}

/**
 * First start with no clients: create one with every scope, so the API is usable at once.
 * Its credentials come from configuration, or are written to an owner-only file whose path
 * (never the secret) is logged. Instances starting together on a new database may both find no
 * configured client and both create it: the one whose insert loses finds it made, and goes on. A
 * generated client is made by one of them only (ClientsRepository.createFirst), and only that one
 * writes the file: a second would be a client whose secret no file holds.
 */
export async function bootstrapClient(
  log: { info: (o: object, m: string) => void },
  config: Pick<Config, 'dataDir' | 'bootstrapClientId' | 'bootstrapClientSecret'>,
  admin: ClientAdmin,
): Promise<void> {
  const file = join(config.dataDir, 'bootstrap-client.json')
  privateFile(file) // one an older version wrote with the umask's mode
  const id = config.bootstrapClientId
  if (id && config.bootstrapClientSecret) {
    if (await admin.clients.find(id)) return
    try {
      await createClient(admin, { name: 'bootstrap', scopes: [...admin.scopes], id, secret: config.bootstrapClientSecret })
    } catch (err) {
      // Another instance created it meanwhile (the id is the clients' key): the same client, from the same configuration.
      if (await admin.clients.find(id)) return
      throw err
    }
    log.info({ client_id: id }, 'bootstrap client created from configuration')
    return
  }
  if ((await admin.clients.count()) > 0) return
  // Counted again with the insert, in turn: of instances starting together, one makes it (and its file).
  const { row, credentials: creds } = newClient(admin, { name: 'bootstrap', scopes: [...admin.scopes] })
  if (!(await admin.clients.createFirst(row))) return
  privateDir(config.dataDir)
  writePrivateFile(file, `${JSON.stringify(creds, null, 2)}\n`)
  log.info({ client_id: creds.client_id, credentials_file: file }, 'bootstrap client created; its secret is in the credentials file')
}
