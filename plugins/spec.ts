// The OpenAPI document, read once. Everything that depends on the contract reads it from here.
import { readFileSync, statSync } from 'node:fs'
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
/** The spec as JSON, written by `npm run build` (scripts/build-spec.ts) for a faster start. */
export const builtSpecPath = join(projectRoot, 'dist', 'spec', 'openapi.json')

let cached: OpenApiDocument | undefined

const mtime = (path: string): number => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return -1
  }
}

/**
 * The spec as written (read once per process; callers must not mutate it). The built JSON copy
 * is used only when it is at least as new as the YAML, so an edited spec is never served stale.
 */
export function loadSpec(): OpenApiDocument {
  if (!cached) {
    const built = mtime(builtSpecPath)
    cached = (
      built >= mtime(specPath) ? JSON.parse(readFileSync(builtSpecPath, 'utf8')) : parse(readFileSync(specPath, 'utf8'))
    ) as OpenApiDocument
  }
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

/** `node` with every local `$ref` of the document resolved (the spec has no recursive schemas). */
export function deref(spec: OpenApiDocument, node: unknown): unknown {
  if (Array.isArray(node)) return node.map((n) => deref(spec, n))
  if (node && typeof node === 'object') {
    const ref = (node as { $ref?: unknown }).$ref
    if (typeof ref === 'string' && ref.startsWith('#/')) {
      const target = ref
        .slice(2)
        .split('/')
        .reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key.replaceAll('~1', '/').replaceAll('~0', '~')], spec)
      if (target === undefined) throw new Error(`spec: unresolved $ref ${ref}`)
      return deref(spec, target)
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(spec, v)]))
  }
  return node
}

/** A component schema with its $refs resolved (for Ajv outside HTTP). */
export function componentSchema(spec: OpenApiDocument, name: string): object {
  const schema = spec.components.schemas[name]
  if (!schema) throw new Error(`spec has no schema ${name}`)
  return deref(spec, schema) as object
}

/** The scopes the spec's OAuth2 scheme declares (client credentials flow). */
export function oauthScopes(spec: OpenApiDocument): string[] {
  const scheme = spec.components.securitySchemes.OAuth2 as { flows?: { clientCredentials?: { scopes?: object } } } | undefined
  const scopes = Object.keys(scheme?.flows?.clientCredentials?.scopes ?? {})
  if (scopes.length === 0) throw new Error('spec: the OAuth2 scheme declares no client-credentials scopes')
  return scopes
}
