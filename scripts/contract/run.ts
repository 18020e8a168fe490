// The contract run: every operation of the spec called on a deployment, every response checked
// against the spec (plugins/spec/conformance.ts: status declared, body schema, required headers,
// X-API-Version, rate-limit headers). The cases come from the spec, not from a list of operations:
// each operation's request example (with the credentials its security asks for), then what its
// declared responses document: the examples of its error responses (provoked by the name of the
// example: `missing_field`, `no_token`, `idempotency_conflict`…), its parameters past their
// bounds, a conditional request where it declares 304, a replay where it takes an Idempotency-Key,
// and its pages where it takes a `limit`. What cannot be provoked from outside without harm (a
// spent budget, a fault, an empty catalogue) is listed as skipped, with why.
import { randomBytes } from 'node:crypto'
import { Conformance } from '../../plugins/spec/conformance.js'
import { deref, flattenObject, type JsonSchema, type OperationInfo, type Spec } from '../../plugins/spec/document.js'
import { type Answer, type Exchange, send } from './http.js'

/** The name and note of every lead the contract submits: clearly not a prospect. */
export const CONTRACT_NAME = 'Contract check'
export const CONTRACT_EMAIL = 'contract-check@example.com'

export interface Credentials {
  base: string
  clientId: string
  clientSecret: string
}

export interface Outcome {
  label: string
  result: 'ok' | 'FAIL' | 'skip'
  problems: string[]
}

type Body = Record<string, unknown>
type Requirement = Record<string, string[]>

interface Expected {
  status: number
  code?: string
}

/** How a documented error example is provoked, by the example's name; a string says why it is not. */
type Provoker = (op: OperationInfo) => Promise<Exchange | string> | Exchange | string

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`

const headerOf = (a: Answer, name: string): string | undefined => {
  const v = a.headers[name.toLowerCase()]
  return Array.isArray(v) ? v.join(', ') : v
}

export class ContractRun {
  readonly outcomes: Outcome[] = []
  /** What the run stored on the deployment: `operationId id`. */
  readonly written: string[] = []
  private readonly conformance: Conformance
  private readonly runId = `${new Date().toISOString().replace(/[-:.]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`
  private granted: string[] = []
  private tokenRefusal = ''
  private bearer = ''
  private readonly tokens = new Map<string, string>()
  private served: Record<string, Requirement[]> = {}
  /** Per operation: the Idempotency-Key and body of its request example, for the replay and the conflict. */
  private readonly idempotent = new Map<string, { key: string; body: Body }>()

  constructor(
    private readonly spec: Spec,
    private readonly creds: Credentials,
    private readonly log: (outcome: Outcome) => void,
  ) {
    this.conformance = new Conformance(spec)
  }

  private record(label: string, result: Outcome['result'], problems: string[] = []): void {
    const outcome = { label, result, problems }
    this.outcomes.push(outcome)
    this.log(outcome)
  }

  /** Sends, then checks the answer: the expected status and code, and everything the spec says of it. */
  private async expect(op: OperationInfo, label: string, ex: Exchange, want: Expected): Promise<Answer | undefined> {
    const name = `${op.operationId} ${want.status}${want.code ? ` ${want.code}` : ''} (${label})`
    let answer: Answer
    try {
      answer = await send(this.creds.base, ex)
    } catch (err) {
      this.record(name, 'FAIL', [`${ex.method} ${ex.url}: no answer: ${(err as Error).message}`])
      return undefined
    }
    const problems: string[] = []
    if (answer.status !== want.status)
      problems.push(`${ex.method} ${ex.url}: status ${answer.status}, expected ${want.status}: ${answer.body.slice(0, 200)}`)
    if (want.code !== undefined) {
      let code: unknown
      try {
        code = (JSON.parse(answer.body) as { code?: unknown }).code
      } catch {}
      if (code !== want.code) problems.push(`${ex.method} ${ex.url}: code ${String(code)}, expected ${want.code}`)
    }
    const findings = this.conformance.check({
      method: ex.method,
      url: ex.url,
      status: answer.status,
      headers: answer.headers,
      body: answer.body,
    })
    for (const f of findings) if (!f.ok) problems.push(`${f.what}${f.detail ? ` ${JSON.stringify(f.detail).slice(0, 400)}` : ''}`)
    this.record(name, problems.length === 0 ? 'ok' : 'FAIL', problems)
    return answer
  }

  /** A token for these scopes (the client's own when none are named), from the token endpoint. */
  private async token(scopes?: string[]): Promise<string | undefined> {
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

  private anonymousAllowed(op: OperationInfo): boolean {
    const reqs = this.requirements(op)
    return reqs.length === 0 || reqs.some((r) => Object.keys(r).length === 0)
  }

  /** Credentials that meet the operation's security, or why the client has none. */
  private credentialsFor(op: OperationInfo): Record<string, string> | string {
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
  private exampleBody(op: OperationInfo): Body | undefined {
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
  private exchange(
    op: OperationInfo,
    auth: Record<string, string>,
    body = this.exampleBody(op),
    extra: Record<string, string> = {},
  ): Exchange {
    const ex: Exchange = { method: op.method.toUpperCase(), url: op.path, headers: { ...auth, ...extra } }
    if (body) {
      const { type, text } = this.encode(op, body)
      ex.headers = { ...ex.headers, 'content-type': type }
      ex.body = text
    }
    return ex
  }

  private params(op: OperationInfo): { name: string; in: string; schema: JsonSchema }[] {
    return ((op.parameters as unknown[] | undefined) ?? []).map(
      (p) => deref(this.spec.document, p) as { name: string; in: string; schema: JsonSchema },
    )
  }

  /** The first status of a kind the operation declares (`2` for success). */
  private declared(op: OperationInfo, first: string): number | undefined {
    const s = Object.keys((op.responses as object | undefined) ?? {}).find((k) => k.startsWith(first))
    return s ? Number(s) : undefined
  }

  async run(): Promise<void> {
    const served = await send(this.creds.base, { method: 'GET', url: '/openapi.json' }).catch(() => undefined)
    if (served?.status === 200) {
      const doc = JSON.parse(served.body) as {
        info?: { version?: string }
        paths?: Record<string, Record<string, { operationId?: string; security?: Requirement[] }>>
      }
      const ok = doc.info?.version === this.spec.version
      this.record(
        `/openapi.json is the spec's version ${this.spec.version}`,
        ok ? 'ok' : 'FAIL',
        ok ? [] : [`the deployment serves ${doc.info?.version}`],
      )
      for (const item of Object.values(doc.paths ?? {}))
        for (const o of Object.values(item)) if (o.operationId && o.security) this.served[o.operationId] = o.security
    } else {
      this.record('/openapi.json', 'FAIL', [`GET /openapi.json: ${served ? served.status : 'no answer'}`])
    }
    const bearer = await this.token()
    if (!bearer) {
      this.record('a token for the client (client credentials)', 'FAIL', [
        `the token endpoint refused the client (${this.tokenRefusal}): check --client-id and --client-secret`,
      ])
      return
    }
    this.bearer = bearer
    for (const op of this.spec.operations.values()) await this.operation(op)
  }

  private async operation(op: OperationInfo): Promise<void> {
    const auth = this.credentialsFor(op)
    const success = this.declared(op, '2') ?? 200
    if (typeof auth === 'string') {
      this.record(`${op.operationId} ${success} (request example)`, 'skip', [auth])
      return
    }
    const idempotency = this.params(op).find((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')
    const body = this.exampleBody(op)
    const key = `contract-check-${this.runId}-${op.operationId}`
    if (idempotency && body) this.idempotent.set(op.operationId, { key, body })
    const first = await this.expect(op, 'request example', this.exchange(op, auth, body, idempotency ? { [idempotency.name]: key } : {}), {
      status: success,
    })
    if (first?.status === success && body && (body.name === CONTRACT_NAME || body.email === CONTRACT_EMAIL)) {
      const id = (JSON.parse(first.body) as { id?: string }).id
      this.written.push(`${op.operationId} ${id ?? '(no id)'}`)
    }
    if (first?.status === success) await this.followUps(op, auth, first, idempotency ? { name: idempotency.name, key } : undefined)
    await this.documentedErrors(op)
    await this.parameterBounds(op, auth)
  }

  /** What a success makes possible: the conditional request, the replay, the next pages. */
  private async followUps(
    op: OperationInfo,
    auth: Record<string, string>,
    first: Answer,
    idempotency?: { name: string; key: string },
  ): Promise<void> {
    const params = this.params(op)
    const etag = headerOf(first, 'etag')
    const conditional = params.find((p) => p.in === 'header' && p.name.toLowerCase() === 'if-none-match')
    if (this.declared(op, '304') && conditional && etag) {
      await this.expect(op, 'If-None-Match with the ETag', this.exchange(op, auth, undefined, { [conditional.name]: etag }), {
        status: 304,
      })
    }
    const stored = this.idempotent.get(op.operationId)
    if (idempotency && stored) {
      const again = await this.expect(
        op,
        'the same Idempotency-Key and body again',
        this.exchange(op, auth, stored.body, { [idempotency.name]: idempotency.key }),
        {
          status: first.status,
        },
      )
      if (again && again.body !== first.body)
        this.record(`${op.operationId} replay returns the first answer`, 'FAIL', [`first ${first.body}, then ${again.body}`])
    }
    const limit = params.find((p) => p.in === 'query' && p.name === 'limit')
    if (limit && typeof limit.schema.minimum === 'number') {
      let url: string | undefined = `${op.path}?limit=${limit.schema.minimum}`
      for (let page = 1; url && page <= 3; page++) {
        const answer = await this.expect(
          op,
          `page ${page} of limit=${limit.schema.minimum}`,
          { ...this.exchange(op, auth), url },
          { status: first.status },
        )
        const next = answer && /<([^>]+)>; rel="next"/.exec(headerOf(answer, 'link') ?? '')?.[1]
        url = next ? new URL(next, this.creds.base).pathname + new URL(next, this.creds.base).search : undefined
      }
    }
  }

  /** Each example of each declared error response, provoked by its name (or skipped, saying why). */
  private async documentedErrors(op: OperationInfo): Promise<void> {
    const responses = (op.responses ?? {}) as Record<string, unknown>
    const skipped = new Map<string, string[]>()
    for (const [status, written] of Object.entries(responses)) {
      if (!/^[45]\d\d$/.test(status)) continue
      const response = deref(this.spec.document, written) as {
        content?: Record<string, { examples?: Record<string, { value?: { code?: string } }> }>
      }
      for (const [name, example] of Object.entries(response.content?.['application/json']?.examples ?? {})) {
        const provoke = this.provokers[name]
        const ex = provoke ? await provoke(op) : 'no way to provoke it is known'
        if (typeof ex === 'string') {
          skipped.set(ex, [...(skipped.get(ex) ?? []), `${status} ${name}`])
          continue
        }
        await this.expect(op, `documented example ${name}`, ex, {
          status: Number(status),
          ...(example.value?.code && { code: example.value.code }),
        })
      }
    }
    for (const [why, which] of skipped) this.record(`${op.operationId} ${which.join(', ')}`, 'skip', [why])
  }

  /** Each parameter past its bound (maxLength, maximum): 400 invalid_request, where 400 is declared. */
  private async parameterBounds(op: OperationInfo, auth: Record<string, string>): Promise<void> {
    if (!this.declared(op, '400')) return
    for (const p of this.params(op)) {
      const { maxLength, maximum } = p.schema as { maxLength?: number; maximum?: number }
      const value = maxLength !== undefined ? 'a'.repeat(maxLength + 1) : maximum !== undefined ? String(maximum + 1) : undefined
      if (value === undefined || (p.in !== 'query' && p.in !== 'header')) continue
      const ex = this.exchange(op, auth, this.exampleBody(op), p.in === 'header' ? { [p.name]: value } : {})
      if (p.in === 'query') ex.url = `${op.path}?${new URLSearchParams({ [p.name]: value })}`
      await this.expect(op, `${p.name} past its bound`, ex, { status: 400, code: 'invalid_request' })
    }
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

  private readonly provokers: Record<string, Provoker> = {
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
