// What the spec deprecates in an operation: the operation itself, a parameter, or a field of its
// request or response bodies marked `deprecated: true`, each with `x-sunset` (the date it goes) and
// optionally `x-deprecated-at` (the date the deprecation took effect). The routes plugin turns it
// into the RFC 9745 `Deprecation`, RFC 8594 `Sunset` and `Link: rel="deprecation"` headers of
// every response of the operation; the served document says it in the operation's description.
import { deref, type OpenApiDocument } from './document.js'

export interface Deprecated {
  /** What is deprecated: the operation, `parameter X`, or a field (`field note`). */
  what: string
  sunset?: Date
  since?: Date
}

export interface OperationDeprecation {
  items: Deprecated[]
  /** The earliest sunset among the items (RFC 8594: when the deprecated part stops working). */
  sunset?: Date
  /** The earliest date a deprecation took effect, where the spec gives one. */
  since?: Date
}

/** A date of the spec (`2027-06-30`, as YAML and JSON carry it), or a clear error. */
function dateOf(value: unknown, where: string): Date | undefined {
  if (value === undefined) return undefined
  const date = value instanceof Date ? value : new Date(String(value))
  if (Number.isNaN(date.getTime())) throw new Error(`spec: ${where} must be a date such as 2027-06-30, not ${JSON.stringify(value)}`)
  return date
}

type Node = Record<string, unknown>

/** Every node of a schema tree marked deprecated, with the property name it sits under. */
function deprecatedFields(node: unknown, name: string, out: { name: string; node: Node }[]): void {
  if (Array.isArray(node)) {
    for (const n of node) deprecatedFields(n, name, out)
    return
  }
  if (!node || typeof node !== 'object') return
  const obj = node as Node
  if (obj.deprecated === true) out.push({ name, node: obj })
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'properties' && value && typeof value === 'object') {
      for (const [prop, schema] of Object.entries(value)) deprecatedFields(schema, prop, out)
    } else if (key !== 'examples' && key !== 'example') {
      deprecatedFields(value, name, out)
    }
  }
}

const earliest = (dates: (Date | undefined)[]): Date | undefined =>
  dates.filter((d): d is Date => d !== undefined).sort((a, b) => a.getTime() - b.getTime())[0]

/** The deprecations of one operation (written as in `paths`), or undefined when it has none. */
export function deprecationOf(doc: OpenApiDocument, operationId: string, op: Node): OperationDeprecation | undefined {
  const items: Deprecated[] = []
  const item = (what: string, node: Node) => {
    const sunset = dateOf(node['x-sunset'], `x-sunset of ${operationId} (${what})`)
    const since = dateOf(node['x-deprecated-at'], `x-deprecated-at of ${operationId} (${what})`)
    items.push({ what, ...(sunset && { sunset }), ...(since && { since }) })
  }
  if (op.deprecated === true) item('the operation', op)
  for (const p of (op.parameters as unknown[] | undefined) ?? []) {
    const param = deref(doc, p) as Node
    if (param.deprecated === true) item(`parameter ${param.name}`, param)
  }
  const bodies = [op.requestBody, ...Object.values((op.responses as Node | undefined) ?? {})]
  const fields: { name: string; node: Node }[] = []
  for (const body of bodies) {
    const content = (deref(doc, body) as { content?: Record<string, { schema?: unknown }> } | undefined)?.content ?? {}
    for (const media of Object.values(content)) deprecatedFields(deref(doc, media.schema), '', fields)
  }
  const seen = new Set<string>()
  for (const { name, node } of fields) {
    const what = name ? `field ${name}` : 'a body schema'
    const key = `${what} ${String(node['x-sunset'])}`
    if (seen.has(key)) continue
    seen.add(key)
    item(what, node)
  }
  if (items.length === 0) return undefined
  const sunset = earliest(items.map((i) => i.sunset))
  const since = earliest(items.map((i) => i.since))
  return { items, ...(sunset && { sunset }), ...(since && { since }) }
}

/** RFC 9745: the Deprecation field is a Structured Field Date, `@` and seconds since the epoch. */
export const sfDate = (date: Date): string => `@${Math.floor(date.getTime() / 1000)}`

/** RFC 8594: Sunset is an HTTP-date (IMF-fixdate). */
export const httpDate = (date: Date): string => date.toUTCString()
