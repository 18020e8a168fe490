// The OpenAPI document and what the server reads from it: operations by operationId, component
// schemas with their $refs resolved, the OAuth scopes, the version, and the document as served.
import type { Config } from '../../config.js'
import { deprecationOf, type OperationDeprecation } from './deprecation.js'

export interface RateLimitExtension {
  max: number
  window: string
  anonymous_max?: number
}

export interface Operation {
  operationId: string
  security?: Record<string, string[]>[]
  'x-rate-limit'?: RateLimitExtension
  'x-body-limit'?: number
  requestBody?: { content: Record<string, unknown> }
  [key: string]: unknown
}

export type OperationInfo = Operation & { method: string; path: string }

export interface OpenApiDocument {
  openapi: string
  info: { version: string; title: string; [key: string]: unknown }
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown>; [key: string]: unknown }
  servers?: { url: string; description?: string; [key: string]: unknown }[]
  [key: string]: unknown
}

/** A JSON Schema object (as the spec writes them). */
export type JsonSchema = Record<string, unknown>

/** `node` with every local `$ref` of the document resolved (the spec has no recursive schemas). */
export function deref(doc: object, node: unknown): unknown {
  if (Array.isArray(node)) return node.map((n) => deref(doc, n))
  if (node && typeof node === 'object') {
    const ref = (node as { $ref?: unknown }).$ref
    if (typeof ref === 'string' && ref.startsWith('#/')) {
      const target = ref
        .slice(2)
        .split('/')
        .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], doc)
      if (target === undefined) throw new Error(`spec: unresolved $ref ${ref}`)
      return deref(doc, target)
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(doc, v)]))
  }
  return node
}

/**
 * One object schema from a schema whose `allOf` members are object schemas: their properties and
 * required lists merged, closed (`additionalProperties: false`) when the source refuses unknown
 * properties. MCP hosts read tool arguments as one flat object schema.
 */
export function flattenObject(schema: JsonSchema): JsonSchema {
  const parts = [schema, ...((schema.allOf as JsonSchema[] | undefined) ?? []).map(flattenObject)]
  const properties = Object.assign({}, ...parts.map((p) => (p.properties as object | undefined) ?? {}))
  const required = [...new Set(parts.flatMap((p) => (p.required as string[] | undefined) ?? []))]
  const closed = schema.unevaluatedProperties === false || schema.additionalProperties === false
  const { allOf: _allOf, unevaluatedProperties: _u, ...rest } = schema
  return {
    ...rest,
    type: 'object',
    properties,
    ...(required.length > 0 && { required }),
    ...(closed && { additionalProperties: false }),
  }
}

export class Spec {
  readonly version: string
  readonly title: string
  /** The scopes the OAuth2 scheme declares (client-credentials flow). */
  readonly scopes: readonly string[]
  /** Every operation, by operationId. */
  readonly operations: ReadonlyMap<string, OperationInfo>
  private readonly schemas = new Map<string, JsonSchema>()
  private readonly deprecations = new Map<string, OperationDeprecation | undefined>()

  constructor(readonly document: OpenApiDocument) {
    this.version = document.info.version
    this.title = document.info.title
    const scheme = document.components.securitySchemes.OAuth2 as { flows?: { clientCredentials?: { scopes?: object } } } | undefined
    this.scopes = Object.keys(scheme?.flows?.clientCredentials?.scopes ?? {})
    if (this.scopes.length === 0) throw new Error('spec: the OAuth2 scheme declares no client-credentials scopes')
    const ops = new Map<string, OperationInfo>()
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (op && typeof op === 'object' && 'operationId' in op) ops.set(op.operationId, { ...op, method, path })
      }
    }
    this.operations = ops
  }

  /** A component schema with its $refs resolved (computed once; callers must not mutate it). */
  schema(name: string): JsonSchema {
    let schema = this.schemas.get(name)
    if (!schema) {
      const written = this.document.components.schemas[name]
      if (!written) throw new Error(`spec has no schema ${name}`)
      schema = deref(this.document, written) as JsonSchema
      this.schemas.set(name, schema)
    }
    return schema
  }

  /**
   * What an operation deprecates (deprecation.ts), or undefined: computed once per operation, for
   * the served document (read twice an app: /openapi.json and the routes) and the routes' headers.
   */
  deprecation(operationId: string): OperationDeprecation | undefined {
    if (!this.deprecations.has(operationId)) {
      const op = this.operations.get(operationId)
      if (!op) throw new Error(`spec has no operation ${operationId}`)
      this.deprecations.set(operationId, deprecationOf(this.document, operationId, op))
    }
    return this.deprecations.get(operationId)
  }

  /**
   * The document as this deployment serves it (/openapi.json, /docs): this server's URL, the
   * absolute token URL, the anonymous alternative `{}` on operations that declare an
   * `anonymous_max` when the operator allows anonymous submissions, and without the
   * `x-internal` schemas (MCP tool arguments and data files, which are not HTTP shapes) and the
   * security schemes no operation lists (the `ApiKey` scheme: nothing here accepts it, so a
   * client, or the /docs page's Authorize dialog, should not offer it).
   */
  served(config: Pick<Config, 'publicBaseUrl' | 'leadsAllowAnonymous'>): OpenApiDocument {
    const out = structuredClone(this.document)
    // This deployment's URL, with what the spec says of its server (its audience and environment).
    out.servers = [{ ...this.document.servers?.[0], url: config.publicBaseUrl }]
    const flows = (out.components.securitySchemes.OAuth2 as { flows?: { clientCredentials?: { tokenUrl: string } } })?.flows
    if (flows?.clientCredentials) flows.clientCredentials.tokenUrl = `${config.publicBaseUrl}/api/token`
    if (config.leadsAllowAnonymous) {
      for (const item of Object.values(out.paths)) {
        for (const op of Object.values(item)) {
          if (op?.['x-rate-limit']?.anonymous_max !== undefined) op.security = [...(op.security ?? []), {}]
        }
      }
    }
    for (const item of Object.values(out.paths)) {
      for (const op of Object.values(item)) {
        const deprecation = op?.operationId ? this.deprecation(op.operationId) : undefined
        if (deprecation) describeDeprecation(out, op, deprecation)
      }
    }
    for (const [name, schema] of Object.entries(out.components.schemas)) {
      if ((schema as JsonSchema)['x-internal'] === true) delete out.components.schemas[name]
    }
    const listed = new Set(
      Object.values(out.paths).flatMap((item) => Object.values(item).flatMap((op) => (op?.security ?? []).flatMap((r) => Object.keys(r)))),
    )
    for (const name of Object.keys(out.components.securitySchemes)) if (!listed.has(name)) delete out.components.securitySchemes[name]
    return out
  }
}

/**
 * A deprecated operation as the served document describes it: its description says what is
 * deprecated and until when, and its responses (those of a route: not what is answered before a
 * request could be read) declare the deprecation headers the routes plugin sends.
 */
function describeDeprecation(doc: OpenApiDocument, op: Operation, deprecation: OperationDeprecation): void {
  const day = (d: Date) => d.toISOString().slice(0, 10)
  const items = deprecation.items.map((i) => `${i.what}${i.sunset ? ` (sunset ${day(i.sunset)})` : ''}`).join(', ')
  op.description = [
    `**Deprecated:** ${items}. Every response carries \`Deprecation\`${deprecation.sunset ? ', `Sunset`' : ''} and \`Link: <…/changelog>; rel="deprecation"\`; the changelog says what to use instead.`,
    op.description,
  ]
    .filter(Boolean)
    .join('\n\n')
  const responses = (op.responses ?? {}) as Record<string, { $ref?: string; headers?: Record<string, unknown> }>
  for (const [status, written] of Object.entries(responses)) {
    const ref = written.$ref
    const response = ref?.startsWith('#/components/responses/')
      ? (doc.components.responses as Record<string, typeof written>)[ref.slice('#/components/responses/'.length)]
      : written
    if (!response?.headers || !('X-RateLimit-Limit' in response.headers)) continue
    responses[status] = {
      ...response,
      headers: {
        ...response.headers,
        Deprecation: { $ref: '#/components/headers/Deprecation' },
        ...(deprecation.sunset && { Sunset: { $ref: '#/components/headers/Sunset' } }),
        ...(!('Link' in response.headers) && { Link: { $ref: '#/components/headers/DeprecationLink' } }),
      },
    }
  }
}
