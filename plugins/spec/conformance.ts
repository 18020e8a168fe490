// Is a response what the spec describes? Its status is declared for the operation, its JSON body
// validates against the schema of that status, the headers marked required are there and fit their
// schemas, X-API-Version is the spec's version, and the rate-limit headers are on every response
// that spent a budget. One checker for the test suites (test/helpers/app.ts's call(), on every
// response they see) and for the contract run against a deployment (scripts/contract.ts).
import type { ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { deref, type Spec } from './document.js'

/** A response as received: headers by lower-case name. */
export interface ResponseFacts {
  method: string
  /** The request's URL path, with or without its query string. */
  url: string
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

/** One check of a response: what was checked and whether it held. */
export interface Finding {
  ok: boolean
  what: string
  detail?: unknown
}

/** A response header as the spec declares it. */
export interface HeaderSpec {
  required?: boolean
  schema?: { type?: string }
}

/** The paths whose responses carry no rate-limit headers, as the spec's description says: the probes. */
export const RATE_LIMIT_EXEMPT = ['/healthz', '/readyz']

const headerValue = (raw: string | string[] | number | undefined): string | undefined =>
  raw === undefined ? undefined : Array.isArray(raw) ? raw.join(', ') : String(raw)

/** What the spec says of a response: whether the status is declared, its JSON body's schema and its headers. */
export interface ResponseSpec {
  declared: boolean
  schema?: unknown
  headers?: Record<string, HeaderSpec>
}

export class Conformance {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true })
  private readonly compiled = new Map<string, ValidateFunction>()
  private readonly described = new Map<string, ResponseSpec>()

  constructor(readonly spec: Spec) {
    ;(addFormats as unknown as (a: Ajv2020) => void)(this.ajv)
  }

  private validatorFor(key: string, schema: unknown): ValidateFunction {
    let v = this.compiled.get(key)
    if (!v) {
      v = this.ajv.compile(deref(this.spec.document, schema) as object) as ValidateFunction
      this.compiled.set(key, v)
    }
    return v
  }

  /**
   * The spec's description of a response: the JSON schema of its body, if it has one, and its
   * headers. A path the spec does not have is described by the Error schema for an error status.
   */
  responseSpec(method: string, url: string, status: number): ResponseSpec {
    const path = url.split('?')[0] ?? '/'
    const key = `${method.toUpperCase()} ${path} ${status}`
    const cached = this.described.get(key)
    if (cached) return cached
    const described = this.describe(method, path, status)
    // Kept for the spec's own paths only (a bounded set), not for every path a caller tried.
    if (Object.hasOwn(this.spec.document.paths, path)) this.described.set(key, described)
    return described
  }

  /** responseSpec, uncached (the spec's schemas expanded: what a suite of thousands of calls asked again and again). */
  private describe(method: string, path: string, status: number): ResponseSpec {
    const op = this.spec.document.paths[path]?.[method.toLowerCase() === 'head' ? 'get' : method.toLowerCase()] as
      | { responses: Record<string, unknown> }
      | undefined
    if (!op) return { declared: true, schema: status >= 400 ? { $ref: '#/components/schemas/Error' } : undefined }
    const response = deref(this.spec.document, op.responses[String(status)]) as
      | { content?: Record<string, { schema?: unknown }>; headers?: Record<string, HeaderSpec> }
      | undefined
    if (!response) return { declared: false }
    return { declared: true, schema: response.content?.['application/json']?.schema, headers: response.headers ?? {} }
  }

  /** Every header the spec marks required is sent, and fits its schema. */
  private requiredHeaders(where: string, res: ResponseFacts, headers: Record<string, HeaderSpec>): Finding[] {
    const findings: Finding[] = []
    for (const [name, header] of Object.entries(headers)) {
      if (!header.required) continue
      const value = headerValue(res.headers[name.toLowerCase()])
      if (value === undefined) {
        findings.push({ ok: false, what: `${where}: the spec marks ${name} required, and it is missing` })
        continue
      }
      const typed = header.schema?.type === 'integer' ? Number(value) : value
      const validate = this.validatorFor(`header ${JSON.stringify(header.schema ?? {})}`, header.schema ?? {})
      findings.push({ ok: validate(typed), what: `${where}: ${name} fits the spec`, detail: { value, errors: validate.errors } })
    }
    return findings
  }

  /** The checks of one response, each a finding (all of them, passed or not). */
  check(res: ResponseFacts): Finding[] {
    const { method, url, status } = res
    const where = `${method} ${url} → ${status}`
    const path = url.split('?')[0] ?? ''
    const isSpecPath = this.spec.document.paths[path] !== undefined
    const findings: Finding[] = []
    const version = headerValue(res.headers['x-api-version'])
    findings.push({
      ok: version === this.spec.version,
      what: `${where}: X-API-Version`,
      detail: { found: version, wanted: this.spec.version },
    })
    const described = isSpecPath || status >= 400 ? this.responseSpec(method, url, status) : undefined
    // Answers written before a request could be read spent no budget: the spec lists no rate-limit headers for them.
    const unbudgeted = RATE_LIMIT_EXEMPT.includes(path) || (described?.headers !== undefined && !('X-RateLimit-Limit' in described.headers))
    if (!unbudgeted) {
      for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
        const value = headerValue(res.headers[name.toLowerCase()])
        findings.push({ ok: value !== undefined && /^\d+$/.test(value), what: `${where}: ${name}`, detail: { found: value } })
      }
    }
    if (!described) return findings
    findings.push({ ok: described.declared, what: `${where}: status declared in the spec` })
    if (described.headers) findings.push(...this.requiredHeaders(where, res, described.headers))
    if (described.schema && method !== 'HEAD') {
      const validate = this.validatorFor(`${method} ${path} ${status}`, described.schema)
      let body: unknown
      try {
        body = JSON.parse(res.body)
      } catch {
        findings.push({ ok: false, what: `${where}: body is not JSON: ${res.body.slice(0, 200)}` })
        return findings
      }
      findings.push({
        ok: validate(body),
        what: `${where}: body matches the spec`,
        detail: { errors: validate.errors, body: res.body.slice(0, 300) },
      })
    }
    return findings
  }
}
