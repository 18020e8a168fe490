// The contract run: every operation of the spec called on a deployment, every response checked
// against the spec (plugins/spec/conformance.ts: status declared, body schema, required headers,
// X-API-Version, rate-limit headers). The cases come from the spec, not from a list of operations:
// each operation's request example (with the credentials its security asks for), then what its
// declared responses document: the examples of its error responses (provoked by the name of the
// example: `missing_field`, `no_token`, `idempotency_conflict`…), its parameters past their
// bounds, a conditional request where it declares 304, a replay where it takes an Idempotency-Key,
// and its pages where it takes a `limit`. What cannot be provoked from outside without harm (a
// spent budget, a fault, an empty catalogue) is listed as skipped, with why.
import { Conformance } from '../../plugins/spec/conformance.js'
import { deref, type OperationInfo, type Spec } from '../../plugins/spec/document.js'
import { type Answer, type Exchange, send } from './http.js'
import { CONTRACT_EMAIL, CONTRACT_NAME, type Credentials, Requests } from './requests.js'

export { CONTRACT_EMAIL, CONTRACT_NAME, type Credentials } from './requests.js'

export interface Outcome {
  label: string
  result: 'ok' | 'FAIL' | 'skip'
  problems: string[]
}

interface Expected {
  status: number
  code?: string
}

const headerOf = (a: Answer, name: string): string | undefined => {
  const v = a.headers[name.toLowerCase()]
  return Array.isArray(v) ? v.join(', ') : v
}

export class ContractRun {
  readonly outcomes: Outcome[] = []
  /** What the run stored on the deployment: `operationId id`. */
  readonly written: string[] = []
  private readonly conformance: Conformance
  private readonly req: Requests

  constructor(
    private readonly spec: Spec,
    private readonly creds: Credentials,
    private readonly log: (outcome: Outcome) => void,
  ) {
    this.conformance = new Conformance(spec)
    this.req = new Requests(spec, creds)
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

  async run(): Promise<void> {
    const served = await send(this.creds.base, { method: 'GET', url: '/openapi.json' }).catch(() => undefined)
    if (served?.status === 200) {
      const doc = JSON.parse(served.body) as {
        info?: { version?: string }
        paths?: Record<string, Record<string, { operationId?: string; security?: Record<string, string[]>[] }>>
      }
      const ok = doc.info?.version === this.spec.version
      this.record(
        `/openapi.json is the spec's version ${this.spec.version}`,
        ok ? 'ok' : 'FAIL',
        ok ? [] : [`the deployment serves ${doc.info?.version}`],
      )
      for (const item of Object.values(doc.paths ?? {}))
        for (const o of Object.values(item)) if (o.operationId && o.security) this.req.served[o.operationId] = o.security
    } else {
      this.record('/openapi.json', 'FAIL', [`GET /openapi.json: ${served ? served.status : 'no answer'}`])
    }
    const bearer = await this.req.token()
    if (!bearer) {
      this.record('a token for the client (client credentials)', 'FAIL', [
        `the token endpoint refused the client (${this.req.tokenRefusal}): check --client-id and --client-secret`,
      ])
      return
    }
    this.req.bearer = bearer
    for (const op of this.spec.operations.values()) await this.operation(op)
  }

  private async operation(op: OperationInfo): Promise<void> {
    const auth = this.req.credentialsFor(op)
    const success = this.req.declared(op, '2') ?? 200
    if (typeof auth === 'string') {
      this.record(`${op.operationId} ${success} (request example)`, 'skip', [auth])
      return
    }
    const idempotency = this.req.params(op).find((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key')
    const body = this.req.exampleBody(op)
    const key = `contract-check-${this.req.runId}-${op.operationId}`
    if (idempotency && body) this.req.idempotent.set(op.operationId, { key, body })
    const first = await this.expect(
      op,
      'request example',
      this.req.exchange(op, auth, body, idempotency ? { [idempotency.name]: key } : {}),
      {
        status: success,
      },
    )
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
    const params = this.req.params(op)
    const etag = headerOf(first, 'etag')
    const conditional = params.find((p) => p.in === 'header' && p.name.toLowerCase() === 'if-none-match')
    if (this.req.declared(op, '304') && conditional && etag) {
      await this.expect(op, 'If-None-Match with the ETag', this.req.exchange(op, auth, undefined, { [conditional.name]: etag }), {
        status: 304,
      })
    }
    const stored = this.req.idempotent.get(op.operationId)
    if (idempotency && stored) {
      const again = await this.expect(
        op,
        'the same Idempotency-Key and body again',
        this.req.exchange(op, auth, stored.body, { [idempotency.name]: idempotency.key }),
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
          { ...this.req.exchange(op, auth), url },
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
        const provoke = this.req.provokers[name]
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
    if (!this.req.declared(op, '400')) return
    for (const p of this.req.params(op)) {
      const { maxLength, maximum } = p.schema as { maxLength?: number; maximum?: number }
      const value = maxLength !== undefined ? 'a'.repeat(maxLength + 1) : maximum !== undefined ? String(maximum + 1) : undefined
      if (value === undefined || (p.in !== 'query' && p.in !== 'header')) continue
      const ex = this.req.exchange(op, auth, this.req.exampleBody(op), p.in === 'header' ? { [p.name]: value } : {})
      if (p.in === 'query') ex.url = `${op.path}?${new URLSearchParams({ [p.name]: value })}`
      await this.expect(op, `${p.name} past its bound`, ex, { status: 400, code: 'invalid_request' })
    }
  }
}
