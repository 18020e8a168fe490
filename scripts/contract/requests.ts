// How the contract's requests are built from the spec: each operation's request example, marked
// as the contract's and sent with the credentials its security asks for, and, for each documented
// example of an error response, the request that provokes it, by the example's name (or why it
// cannot be provoked from outside). scripts/contract/run.ts sends them and checks the answers.
import { randomBytes } from 'node:crypto'
import { deref, flattenObject, type JsonSchema, type OperationInfo, type Spec } from '../../plugins/spec/document.js'
import { type Exchange, send } from './http.js'

/** The name and address of every lead the contract submits: clearly not a prospect. */
export const CONTRACT_NAME = 'Contract check'
export const CONTRACT_EMAIL = 'contract-check@example.com'

export interface Credentials {
  base: string
  clientId: string
  clientSecret: string
}

export type Body = Record<string, unknown>
type Requirement = Record<string, string[]>

/** How a documented error example is provoked, by the example's name; a string says why it is not. */
type Provoker = (op: OperationInfo) => Promise<Exchange | string> | Exchange | string

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

export class Requests {
  readonly runId = `${new Date().toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`
  /** The scopes the client has (its first token's). */
  granted: string[] = []
  /** Why the token endpoint refused the client, if it did. */
  tokenRefusal = ''
  bearer = ''
  private readonly tokens = new Map<string, string>()
  /** The security requirements the deployment serves, by operationId (the anonymous alternative included when allowed). */
  served: Record<string, Requirement[]> = {}
  /** Per operation: the Idempotency-Key and body of its request example, for the replay and the conflict. */
  readonly idempotent = new Map<string, { key: string; body: Body }>()

  constructor(
    private readonly spec: Spec,
    private readonly creds: Credentials,
  ) {}

  /** A token for these scopes (the client's own when none are named), from the token endpoint. */
  async token(scopes?: string[]): Promise<string | undefined> {
    const key = scopes?.join(' ') ?? '*'
    const cached = this.tokens.get(key)
    if (cached) return cached
    const form = new URLSearchParams({ grant_type: 'client_credentials', ...(scopes && { scope: scopes.join(' ') }) })
    const a = await send(this.creds.base, {
      method: 'POST',
      url: '/api/token',
      headers: { authorization: basic(this.creds.clientId, this.creds.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    })
    if (a.status !== 200) {
      this.tokenRefusal = `${a.status}: ${a.body.slice(0, 300)}`
      return undefined
    }
    const token = JSON.parse(a.body) as { access_token: string; scope: string }
    if (!scopes) this.granted = token.scope.split(' ')
    this.tokens.set(key, token.access_token)
    return token.access_token
  }

  /** The security requirements the deployment serves for an operation (the anonymous alternative included when allowed). */
  private requirements(op: OperationInfo): Requirement[] {
    return this.served[op.operationId] ?? op.security ?? []
  }

  anonymousAllowed(op: OperationInfo): boolean {
    const reqs = this.requirements(op)
    return reqs.length === 0 || reqs.some((r) => Object.keys(r).length === 0)
  }

  /** Credentials that meet the operation's security, or why the client has none. */
  credentialsFor(op: OperationInfo): Record<string, string> | string {
    const reqs = op.security ?? []
    if (reqs.length === 0 || reqs.some((r) => Object.keys(r).length === 0)) return {}
    for (const r of reqs) {
      if ('ClientBasic' in r) return { authorization: basic(this.creds.clientId, this.creds.clientSecret) }
      const scopes = r.OAuth2
      if (scopes?.every((s) => this.granted.includes(s))) return { authorization: `Bearer ${this.bearer}` }
    }
    return `the client lacks the scopes ${reqs.map((r) => Object.values(r).flat().join(' ')).join(' or ')}`
  }

  private mediaType(op: OperationInfo): { type: string; schema: JsonSchema; example: unknown } | undefined {
    const content = op.requestBody?.content as
      | Record<string, { schema?: unknown; example?: unknown; examples?: Record<string, { value?: unknown }> }>
      | undefined
    const [type, media] = Object.entries(content ?? {})[0] ?? []
    if (!type || !media) return undefined
    const example = media.example ?? Object.values(media.examples ?? {})[0]?.value
    return { type, schema: flattenObject(deref(this.spec.document, media.schema) as JsonSchema), example }
  }

  /** The request example as the contract sends it: leads marked as the contract's, scopes narrowed to the client's. */
  exampleBody(op: OperationInfo): Body | undefined {
    const media = this.mediaType(op)
    if (!media?.example || typeof media.example !== 'object') return undefined
    const body: Body = { ...(media.example as Body) }
    const props = (media.schema.properties ?? {}) as Record<string, unknown>
    if ('name' in props) body.name = CONTRACT_NAME
    if ('email' in props) body.email = CONTRACT_EMAIL
    if ('note' in props)
      body.note = `Submitted by the contract check (npm run contract, run ${this.runId}) of ${this.creds.base}: not an enquiry.`
    if (typeof body.scope === 'string')
      body.scope =
        body.scope
          .split(' ')
          .filter((s) => this.granted.includes(s))
          .join(' ') || undefined
    if (body.scope === undefined) delete body.scope
    return body
  }

  private encode(op: OperationInfo, body: Body, type = this.mediaType(op)?.type ?? 'application/json'): { type: string; text: string } {
    if (type === 'application/x-www-form-urlencoded') return { type, text: new URLSearchParams(body as Record<string, string>).toString() }
    return { type, text: JSON.stringify(body) }
  }

  /** The operation's request example with its credentials (and an Idempotency-Key where it takes one). */
  exchange(op: OperationInfo, auth: Record<string, string>, body = this.exampleBody(op), extra: Record<string, string> = {}): Exchange {
    const ex: Exchange = { method: op.method.toUpperCase(), url: op.path, headers: { ...auth, ...extra } }
    if (body) {
      const { type, text } = this.encode(op, body)
      ex.headers = { ...ex.headers, 'content-type': type }
      ex.body = text
    }
    return ex
  }

  params(op: OperationInfo): { name: string; in: string; schema: JsonSchema }[] {
    return ((op.parameters as unknown[] | undefined) ?? []).map(
      (p) => deref(this.spec.document, p) as { name: string; in: string; schema: JsonSchema },
    )
  }

  /** The first status of a kind the operation declares (`2` for success). */
  declared(op: OperationInfo, first: string): number | undefined {
    const s = Object.keys((op.responses as object | undefined) ?? {}).find((k) => k.startsWith(first))
    return s ? Number(s) : undefined
  }

  /** A token with every scope of the client but this operation's, for its 403. */
  private async narrower(op: OperationInfo): Promise<string | undefined> {
    const needed = new Set((op.security ?? []).flatMap((r) => r.OAuth2 ?? []))
    const others = this.granted.filter((s) => !needed.has(s))
    return others.length > 0 ? this.token(others) : undefined
  }

  private readonly noBody = 'the operation takes no body'
  private readonly unharmful = 'it cannot be provoked from outside without harm to the deployment'

  private jsonBody(op: OperationInfo, edit: (body: Body, schema: JsonSchema) => Body | string | undefined): Exchange | string {
    const media = this.mediaType(op)
    const body = this.exampleBody(op)
    const auth = this.credentialsFor(op)
    if (!media || !body || media.type !== 'application/json') return this.noBody
    if (typeof auth === 'string') return auth
    const edited = edit({ ...body }, media.schema)
    if (typeof edited === 'string') return edited
    return this.exchange(op, auth, edited)
  }

  private raw(op: OperationInfo, type: string, text: string): Exchange | string {
    const auth = this.credentialsFor(op)
    if (!op.requestBody) return this.noBody
    if (typeof auth === 'string') return auth
    return { method: op.method.toUpperCase(), url: op.path, headers: { ...auth, 'content-type': type }, body: text }
  }

  private form(op: OperationInfo, fields: Record<string, string>, auth?: Record<string, string>): Exchange | string {
    if (this.mediaType(op)?.type !== 'application/x-www-form-urlencoded') return 'the operation takes no form'
    const own = auth ?? this.credentialsFor(op)
    if (typeof own === 'string') return own
    return {
      method: 'POST',
      url: op.path,
      headers: { ...own, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    }
  }

  readonly provokers: Record<string, Provoker> = {
    no_token: (op) => {
      if (this.anonymousAllowed(op)) return 'the deployment accepts it without credentials'
      const ex = this.exchange(op, {})
      return ex
    },
    bad_token: (op) =>
      this.anonymousAllowed(op) || !(op.security ?? []).some((r) => 'OAuth2' in r)
        ? 'it takes no bearer token'
        : this.exchange(op, { authorization: 'Bearer contract.check.not-a-token' }),
    insufficient_scope: async (op) => {
      if (!(op.security ?? []).some((r) => 'OAuth2' in r)) return 'it takes no bearer token'
      const token = await this.narrower(op)
      return token ? this.exchange(op, { authorization: `Bearer ${token}` }) : 'the client has no other scope to ask a token for'
    },
    missing_field: (op) =>
      this.jsonBody(op, (body, schema) => {
        const field = ((schema.required as string[] | undefined) ?? []).find((f) => f in body)
        if (!field) return 'its body has no required field'
        delete body[field]
        return body
      }),
    unknown_field: (op) => this.jsonBody(op, (body) => ({ ...body, contract_check_unknown: true })),
    invalid_field: (op) =>
      this.jsonBody(op, (body, schema) => {
        const entry = Object.entries((schema.properties ?? {}) as Record<string, { 'x-invalid-examples'?: unknown[] }>).find(
          ([, s]) => (s['x-invalid-examples']?.length ?? 0) > 0,
        )
        if (!entry) return 'its body schema lists no x-invalid-examples'
        return { ...body, [entry[0]]: entry[1]['x-invalid-examples']?.[0] }
      }),
    malformed_json: (op) => (this.mediaType(op)?.type === 'application/json' ? this.raw(op, 'application/json', '{"name": ') : this.noBody),
    refused_key: (op) => {
      const body = this.exampleBody(op)
      if (this.mediaType(op)?.type !== 'application/json' || !body) return this.noBody
      return this.raw(op, 'application/json', `{"__proto__": {"contract_check": true}, ${JSON.stringify(body).slice(1)}`)
    },
    payload_too_large: (op) => {
      const limit = op['x-body-limit']
      const body = this.exampleBody(op)
      if (limit === undefined || !body) return this.noBody
      const padded = { ...body, contract_check_padding: 'a'.repeat(limit) }
      const ex = this.exchange(
        op,
        typeof this.credentialsFor(op) === 'string' ? {} : (this.credentialsFor(op) as Record<string, string>),
        padded,
      )
      return ex
    },
    unsupported_media_type: (op) => this.raw(op, 'text/plain', 'contract check'),
    idempotency_conflict: (op) => {
      const stored = this.idempotent.get(op.operationId)
      const auth = this.credentialsFor(op)
      if (!stored || typeof auth === 'string') return 'it takes no Idempotency-Key, or its request example failed'
      const header = this.params(op).find((p) => p.name.toLowerCase() === 'idempotency-key')?.name ?? 'Idempotency-Key'
      return this.exchange(op, auth, { ...stored.body, name: `${CONTRACT_NAME} (another body)` }, { [header]: stored.key })
    },
    headers_too_large: (op) => this.exchange(op, {}, undefined, { 'x-contract-check': 'a'.repeat(20_000) }),
    unsupported_grant_type: (op) => this.form(op, { grant_type: 'password' }),
    invalid_scope: (op) => this.form(op, { grant_type: 'client_credentials', scope: 'contract:check' }),
    invalid_target: (op) => this.form(op, { grant_type: 'client_credentials', resource: 'https://contract-check.invalid/' }),
    invalid_request: (op) => this.form(op, { scope: this.granted.join(' ') }),
    invalid_client: (op) =>
      this.form(
        op,
        { grant_type: 'client_credentials' },
        { authorization: basic(this.creds.clientId, `${this.creds.clientSecret}-contract-check`) },
      ),
    no_catalogue: () => 'the deployment has a catalogue (it answers 404 only without one)',
    rate_limited: () => `${this.unharmful} (it would spend the budget)`,
    failed_authentications: () => `${this.unharmful} (it would lock the client out of tokens for a while)`,
    internal_error: () => `${this.unharmful} (it needs a fault)`,
    service_unavailable: () => `${this.unharmful} (it needs storage to fail, or a shutdown)`,
    request_timeout: () => 'it takes the server timeout to wait out',
  }
}
