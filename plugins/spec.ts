// The OpenAPI document, read once. Everything that depends on the contract reads it from here.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { projectRoot } from '../config.js'

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

export interface OpenApiDocument {
  openapi: string
  info: { version: string; title: string; [key: string]: unknown }
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown>; [key: string]: unknown }
  [key: string]: unknown
}

export const specPath = join(projectRoot, 'spec', 'openapi.yaml')

let cached: OpenApiDocument | undefined

/** The spec as written (parsed once per process; callers must not mutate it). */
export function loadSpec(): OpenApiDocument {
  cached ??= parse(readFileSync(specPath, 'utf8')) as OpenApiDocument
  return cached
}

/** Every operation of the spec, keyed by operationId. */
export function operations(spec: OpenApiDocument): Map<string, Operation & { method: string; path: string }> {
  const out = new Map<string, Operation & { method: string; path: string }>()
  for (const [path, item] of Object.entries(spec.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op && typeof op === 'object' && 'operationId' in op) out.set(op.operationId, { ...op, method, path })
    }
  }
  return out
}

/** A component schema with its $refs to other component schemas resolved (for Ajv outside HTTP). */
export function componentSchema(spec: OpenApiDocument, name: string): object {
  const resolve = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(resolve)
    if (node && typeof node === 'object') {
      const ref = (node as { $ref?: string }).$ref
      if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
        return resolve(spec.components.schemas[ref.slice('#/components/schemas/'.length)])
      }
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, resolve(v)]))
    }
    return node
  }
  const schema = spec.components.schemas[name]
  if (!schema) throw new Error(`spec has no schema ${name}`)
  return resolve(schema) as object
}
