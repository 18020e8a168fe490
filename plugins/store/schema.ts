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
  /** Counts the secret's rotations; each token carries the generation it was issued under. */
  secret_generation: number
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
  /** The lead's fields (the spec's LeadFields) as a JSON object. */
  fields: string
  received_at: string
  client_id: string | null
  /** How it arrived: `api`, `form` or `agent`; null for leads stored before 006_personal_data. */
  source: LeadSource | null
  /** When the person consented to be contacted (the form's box, the agent tool's `consent: true`). */
  consented_at: string | null
}

export type LeadSource = 'api' | 'form' | 'agent'

/** One erased lead: no personal data (features/privacy). */
export interface LeadErasuresTable {
  lead_id: string
  /** HMAC-SHA256 of the lowercased address under the server's key: `export` can say an address was erased. */
  email_hash: string
  erased_at: string
  reason: 'request' | 'retention'
  /** SQLite: when the erased bytes were cleared from the database files (VACUUM, WAL truncated); null until then. */
  scrubbed_at: string | null
  /** The lead's place in the log (`leads.seq`), so that paging `after` it goes on; null for erasures before 008. */
  seq: number | null
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

/** How an endpoint's deliveries go: signed HTTP, or email to the studio (the built-in endpoint `email`). */
export type EndpointKind = 'webhook' | 'email'

export interface WebhookEndpointsTable {
  /** `we_…`, or `email` for the built-in email channel. */
  id: string
  kind: Generated<EndpointKind>
  /** The receiver's URL; `mailto:a@x,b@y` for the email channel (its recipients). */
  url: string
  /** Space-separated event types the endpoint receives. */
  events: string
  /** `whsec_…`: the key that signs (kept as it is: signing needs it, a hash would not do). */
  secret: string
  /** The secret before the last rotation, which also signs until `previous_secret_until`. */
  previous_secret: string | null
  previous_secret_until: string | null
  created_at: string
  /** Set when the endpoint answered 410 Gone (or an operator disabled it): nothing is sent. */
  disabled_at: string | null
  disabled_reason: string | null
  /** The instance delivering to this endpoint now, and until when (renewed before each attempt). */
  lease_owner: string | null
  lease_until: string | null
  /** Set by a failed (or held) attempt, cleared by a delivered one: the endpoint is served among the failing ones. */
  failing_since: string | null
  /** The last failed or held attempt's outcome, and when (kept after it recovers). */
  last_failure: string | null
  last_failure_at: string | null
  /** When its last turn ended: the least recently served endpoint goes first. */
  served_at: string | null
}

export interface WebhookEventsTable {
  /** Commit order: the order events reach an endpoint. */
  seq: Generated<number>
  /** `msg_…`: the `webhook-id` of every attempt and replay. */
  id: string
  type: string
  /** The signed body, as sent. */
  payload: string
  created_at: string
  /** The lead the event is about (`lead.received`…); null for events about no lead (`webhook.test`). */
  lead_id: string | null
}

export type DeliveryStatus = 'pending' | 'delivered' | 'dead'

export interface WebhookDeliveriesTable {
  endpoint_id: string
  event_id: string
  event_seq: number
  status: DeliveryStatus
  attempts: Generated<number>
  next_attempt_at: string
  last_attempt_at: string | null
  /** The last attempt's outcome: `200`, `503`, `timeout`, `connection refused`… (never a body). */
  last_outcome: string | null
  delivered_at: string | null
  created_at: string
}

/** A check value of a key the data depends on (never the key): `secret-pepper` (plugins/auth/secrets.ts). */
export interface KeyChecksTable {
  name: string
  value: string
}

/** An instance delivering from the outbox, while it runs (features/webhooks/instances.ts). */
export interface DeliveryInstancesTable {
  id: string
  /** WEBHOOKS_ALLOW_PRIVATE of that instance: 1 or 0. */
  allow_private: number
  started_at: string
  seen_at: string
}

/** A member of the studio's staff, added by the operator (features/staff). */
export interface StaffTable {
  id: string
  /** Lowercased. */
  email: string
  name: string | null
  created_at: string
}

/** An emailed sign-in code (features/staff/codes.ts): only hashes of the code and of the address. */
export interface StaffCodesTable {
  id: string
  email_hash: string
  /** The staff member it was sent to; null when the address is no staff's (nothing was sent). */
  staff_id: string | null
  code_hash: string
  /** The client address that asked (the per-address budget). */
  requested_from: string
  tries: number
  created_at: string
  expires_at: string
  used_at: string | null
}

/** A staff member's passkey (WebAuthn credential). */
export interface StaffPasskeysTable {
  /** The credential id, base64url. */
  id: string
  staff_id: string
  /** COSE public key, base64url. */
  public_key: string
  counter: number
  transports: string | null
  created_at: string
  used_at: string | null
}

/** A one-time enrolment link (features/staff/enrolments.ts): only a hash of its token. */
export interface StaffEnrolmentsTable {
  /** The enrolment's id: its passkey ceremony's challenge is derived from it. */
  id: string
  /** SHA-256 of the link's token, base64url. */
  token_hash: string
  staff_id: string
  created_at: string
  expires_at: string
  used_at: string | null
}

/** One record of the person-facing authorization server (oidc-provider's adapter, features/staff/adapter.ts). */
export interface OidcModelsTable {
  model: string
  id: string
  payload: string
  grant_id: string | null
  uid: string | null
  account_id: string | null
  client_id: string | null
  created_at: string
  expires_at: string | null
  consumed_at: string | null
}

export interface Database {
  clients: ClientsTable
  api_keys: ApiKeysTable
  leads: LeadsTable
  idempotency_keys: IdempotencyKeysTable
  projects: ProjectsTable
  catalogue: CatalogueTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_events: WebhookEventsTable
  webhook_deliveries: WebhookDeliveriesTable
  lead_erasures: LeadErasuresTable
  key_checks: KeyChecksTable
  delivery_instances: DeliveryInstancesTable
  staff: StaffTable
  staff_codes: StaffCodesTable
  staff_passkeys: StaffPasskeysTable
  staff_enrolments: StaffEnrolmentsTable
  oidc_models: OidcModelsTable
}
