// Client ID Metadata Documents: a client whose client_id is an https URL names the JSON document
// of its metadata at that URL, and the authorization server reads it there (no registration).
// oidc-provider 8 (the release line that supports Node 20) has no such feature, so this thin layer
// answers the provider's client lookups for such ids (adapter.ts): the document is fetched with the
// webhooks' address rules (https only; the host must resolve to public addresses, checked at
// connect time, so no DNS rebinding; WEBHOOKS_ALLOW_PRIVATE for tests and a receiver inside your
// network), within 3 seconds and 5 KB, no redirects, and kept for 1 to 60 minutes (its
// Cache-Control max-age) in a bounded cache; a failure is kept a minute, so a URL is fetched at
// most once a minute whatever strangers send. Only public-client metadata is taken from it.
import { request } from 'node:https'
import { FifoMap } from 'toad-cache'
import { guardedLookup, parseTarget } from '../webhooks/safety.js'

export const CIMD_MAX_BYTES = 5 * 1024
export const CIMD_TIMEOUT_MS = 3000
const CACHE_MIN_S = 60
const CACHE_MAX_S = 3600

/** The metadata a client may state about itself in its document. */
const TAKEN = [
  'client_name',
  'client_uri',
  'logo_uri',
  'redirect_uris',
  'grant_types',
  'response_types',
  'application_type',
  'contacts',
  'tos_uri',
  'policy_uri',
  'software_id',
  'software_version',
] as const
const GRANTS = new Set(['authorization_code', 'refresh_token'])

/** Whether a client id is a metadata document's URL: https, a path, no credentials, fragment or dot segments. */
export function isDocumentUrl(id: string): boolean {
  if (!id.startsWith('https://')) return false
  let url: URL
  try {
    url = new URL(id)
  } catch {
    return false
  }
  return (
    url.pathname !== '/' && !id.includes('#') && !url.username && !url.password && !/\/\.\.?(\/|$)/.test(id.slice(8)) && url.href === id
  )
}

export class MetadataDocuments {
  /** Documents by URL, and failures too (undefined), so a stranger cannot make this server fetch a URL on every request. */
  private readonly cache = new FifoMap<{ metadata: Record<string, unknown> | undefined; until: number }>(500)

  constructor(
    private readonly allowPrivate: boolean,
    private readonly onFailure: (id: string, why: string) => void,
  ) {}

  /** The client's metadata for the provider, or undefined (an unknown client to it). */
  async find(id: string, now = Date.now()): Promise<Record<string, unknown> | undefined> {
    const hit = this.cache.get(id)
    if (hit && hit.until > now) return hit.metadata
    try {
      const { body, maxAge } = await fetchDocument(id, this.allowPrivate)
      const metadata = clientMetadata(id, JSON.parse(body))
      this.cache.set(id, { metadata, until: now + maxAge * 1000 })
      return metadata
    } catch (err) {
      this.onFailure(id, (err as Error).message)
      this.cache.set(id, { metadata: undefined, until: now + CACHE_MIN_S * 1000 })
      return undefined
    }
  }
}

/** The provider's metadata of the client from its document; throws when the document may not be used. */
export function clientMetadata(id: string, doc: unknown): Record<string, unknown> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('the document is not a JSON object')
  const given = doc as Record<string, unknown>
  if (given.client_id !== id) throw new Error('the document’s client_id is not its URL')
  if ('client_secret' in given || (given.token_endpoint_auth_method !== undefined && given.token_endpoint_auth_method !== 'none')) {
    throw new Error('a client id metadata document describes a public client (token_endpoint_auth_method none, no secret)')
  }
  const out: Record<string, unknown> = { client_id: id, token_endpoint_auth_method: 'none' }
  for (const key of TAKEN) if (given[key] !== undefined) out[key] = given[key]
  const grants = Array.isArray(out.grant_types) ? (out.grant_types as unknown[]) : ['authorization_code', 'refresh_token']
  out.grant_types = grants.filter((g) => typeof g === 'string' && GRANTS.has(g))
  out.response_types = ['code']
  return out
}

function fetchDocument(id: string, allowPrivate: boolean): Promise<{ body: string; maxAge: number }> {
  const target = parseTarget(id, false)
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      { method: 'GET', headers: { accept: 'application/json' }, lookup: guardedLookup(allowPrivate) as never, timeout: CIMD_TIMEOUT_MS },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume()
          reject(new Error(`the document answered ${res.statusCode}`))
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > CIMD_MAX_BYTES) {
            reject(new Error(`the document is larger than ${CIMD_MAX_BYTES} bytes`))
            res.removeAllListeners('data')
            req.destroy()
            return
          }
          chunks.push(chunk)
        })
        res.on('end', () => {
          const age = /max-age=(\d+)/.exec(String(res.headers['cache-control'] ?? ''))?.[1]
          const maxAge = Math.min(CACHE_MAX_S, Math.max(CACHE_MIN_S, age === undefined ? CACHE_MIN_S : Number(age)))
          resolve({ body: Buffer.concat(chunks).toString('utf8'), maxAge })
        })
        res.on('error', (err) => reject(err))
        res.on('aborted', () => reject(new Error('the document was cut short')))
      },
    )
    const deadline = setTimeout(() => req.destroy(new Error('the document took too long')), CIMD_TIMEOUT_MS)
    req.on('close', () => clearTimeout(deadline))
    req.on('timeout', () => req.destroy(new Error('the document took too long')))
    req.on('error', reject)
    req.end()
  })
}
