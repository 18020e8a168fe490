// Table shapes as Kysely sees them. Timestamps are RFC 3339 UTC strings on every backend,
// so rows map to the API's JSON without conversion and compare correctly as text.
import type { Generated } from 'kysely'

export interface ClientsTable {
  id: string
  name: string
  /** Space-separated allowed scopes. */
  scopes: string
  /** HMAC-SHA256 of the secret, hex; the secret itself is never stored. */
  secret_hash: string
  created_at: string
  revoked_at: string | null
}

export interface ApiKeysTable {
  id: string
  name: string
  scopes: string
  key_hash: string
  created_at: string
  revoked_at: string | null
}

export interface LeadsTable {
  /** Commit order: the log's order and its paging cursor. */
  seq: Generated<number>
  id: string
  name: string
  email: string
  phone: string
  received_at: string
  client_id: string | null
}

export interface IdempotencyKeysTable {
  /** `client:<id>` or `addr:<ip>` for anonymous submissions. */
  owner: string
  key: string
  body_hash: string
  lead_id: string
  created_at: string
}

export interface ProjectsTable {
  id: string
  position: number
  /** The project record as JSON (image URLs relative to the public base URL). */
  doc: string
}

export interface CatalogueTable {
  id: number
  etag: string
  published_at: string
}

export interface Database {
  clients: ClientsTable
  api_keys: ApiKeysTable
  leads: LeadsTable
  idempotency_keys: IdempotencyKeysTable
  projects: ProjectsTable
  catalogue: CatalogueTable
}
