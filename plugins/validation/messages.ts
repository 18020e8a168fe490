// Schema violations in words a person can act on: for a request (an AppError, 400
// invalid_request, whose hint is the property's `x-hint` when the spec gives one) and for a data
// file (an Error naming the file, the key and the value).

import type { ErrorObject } from '../../lib/ajv.js'
import { AppError } from '../errors/codes.js'
import { flattenObject, type JsonSchema } from '../spec/document.js'

const partLabel: Record<string, string> = {
  body: 'field',
  querystring: 'query parameter',
  headers: 'header',
  params: 'path parameter',
  arguments: 'argument',
}

/** The parts of a request that arrive as text (their values are coerced: lib/ajv.ts compileText). */
const TEXT_PARTS = new Set(['querystring', 'headers', 'params'])

const partWhere: Record<string, string> = {
  body: 'The request body',
  querystring: 'The query string',
  headers: 'The headers',
  params: 'The path',
  arguments: 'The tool call',
}

/** The properties an object schema accepts (its `allOf` members' too), as `a`, `b`, `c`. */
function accepted(schema: unknown): string {
  const props = Object.keys((flattenObject((schema ?? {}) as JsonSchema).properties as object | undefined) ?? {})
  return props.map((p) => `\`${p}\``).join(', ')
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value)
  return article(typeof value)
}

const hintOf = (schema: unknown): string | undefined => {
  const hint = (schema as JsonSchema | undefined)?.['x-hint']
  return typeof hint === 'string' ? hint : undefined
}

/** A hint, followed by the property's `x-hint` when the spec gives one. */
const also = (hint: string, schema: unknown): string => {
  const more = hintOf(schema)
  return more === undefined ? hint : `${hint}; ${more}`
}

/**
 * Turns the first schema violation into an invalid_request with a message and a hint. `part`
 * names what was validated: a request part (body, querystring, headers, params) or `arguments`
 * (an MCP tool's).
 */
export function validationError(errors: ErrorObject[], part = 'body'): AppError {
  const e = errors[0]
  const label = partLabel[part] ?? 'field'
  if (!e) return new AppError('invalid_request')
  const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.')
  const where = partWhere[part] ?? 'The request'
  const parent = e.parentSchema as JsonSchema | undefined
  switch (e.keyword) {
    case 'required': {
      const name = String(e.params.missingProperty)
      const full = path ? `${path}.${name}` : name
      const properties = (flattenObject(parent ?? {}).properties ?? {}) as Record<string, unknown>
      return new AppError(
        'invalid_request',
        `${where} is missing the ${label} \`${full}\`.`,
        also(`${label} \`${full}\` is required`, properties[name]),
      )
    }
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const name = String(e.params.additionalProperty ?? e.params.unevaluatedProperty)
      return new AppError(
        'invalid_request',
        `${where} has the unknown ${label} \`${name}\`.`,
        `remove \`${name}\`; accepted ${label}s are ${accepted(parent)}`,
      )
    }
    case 'type': {
      if (!path) {
        return new AppError(
          'invalid_request',
          `${where} must be a JSON object, not ${describe(e.data)}.`,
          hintOf(parent) ?? `send a JSON object with ${(e.schema === 'object' && accepted(parent)) || 'the documented fields'}`,
        )
      }
      const type = String(e.params.type)
      // A query parameter or header is always text: what is wrong is how the number is written.
      const rule =
        TEXT_PARTS.has(part) && typeof e.data === 'string' && (type === 'integer' || type === 'number')
          ? `${article(type)} written as a finite decimal number, such as ${type === 'integer' ? '10' : '2.5'}`
          : `${article(type)}, not ${describe(e.data)}`
      return new AppError(
        'invalid_request',
        `The ${label} \`${path}\` must be ${article(type)}.`,
        also(`${label} \`${path}\` must be ${rule}`, parent),
      )
    }
    case 'enum': {
      const allowed = (e.params.allowedValues as unknown[]).map(String).join(', ')
      const unknown = typeof e.data === 'string' ? `unknown ${path} ${JSON.stringify(e.data)}; ` : ''
      return new AppError(
        'invalid_request',
        `The ${label} \`${path}\` is invalid.`,
        `${unknown}${hintOf(parent) ?? `${path} must be one of: ${allowed}`}`,
      )
    }
    default: {
      const hint = hintOf(parent) ?? `${label} \`${path}\` ${e.message ?? 'is invalid'}`
      return new AppError('invalid_request', `The ${label} \`${path}\` is invalid.`, hint)
    }
  }
}

/** `service_levels[2].furnishings.low` from `/service_levels/2/furnishings/low`. */
function dataPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((seg) => seg.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((out, seg) => (/^\d+$/.test(seg) ? `${out}[${seg}]` : out ? `${out}.${seg}` : seg), '')
}

/** What a data-file value must be, from its schema violation. */
function dataRule(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>
  switch (e.keyword) {
    case 'required':
      return 'is missing'
    case 'type':
      return p.type === 'number' || p.type === 'integer'
        ? `must be a finite ${p.type === 'integer' ? 'integer' : 'number'}`
        : `must be ${article(String(p.type))}`
    case 'minimum':
      return `must be >= ${p.limit}`
    case 'maximum':
      return `must be <= ${p.limit}`
    case 'exclusiveMinimum':
      return `must be > ${p.limit}`
    case 'exclusiveMaximum':
      return `must be < ${p.limit}`
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}`
    case 'pattern':
      return String((e.parentSchema as JsonSchema | undefined)?.['x-hint'] ?? `must match ${p.pattern}`)
    case 'additionalProperties':
      return `is not a known key (remove "${p.additionalProperty}")`
    case 'minItems':
      return `must have at least ${p.limit} item${p.limit === 1 ? '' : 's'}`
    case 'maxItems':
      return `must have at most ${p.limit} items`
    case 'minProperties':
      return `must list at least ${p.limit} entr${p.limit === 1 ? 'y' : 'ies'}`
    case 'propertyNames':
      return 'has a name with surrounding spaces'
    default:
      return e.message ?? 'is invalid'
  }
}

/**
 * Throws an Error naming the file's key, what it must be and what it is, for the first schema
 * violation of a data file: `pricing model: "service_levels[2].furnishings.low" must be >= 0 (got -5)`.
 */
export function dataError(label: string, errors: ErrorObject[]): Error {
  const e = errors[0]
  if (!e) return new Error(`${label}: is invalid`)
  let path = dataPath(e.instancePath)
  if (e.keyword === 'required') path = path ? `${path}.${String(e.params.missingProperty)}` : String(e.params.missingProperty)
  if (e.keyword === 'propertyNames') path = path ? `${path}.${String(e.params.propertyName)}` : String(e.params.propertyName)
  const got = e.keyword === 'required' || e.keyword === 'additionalProperties' || e.data === undefined ? '' : JSON.stringify(e.data)
  const shown = got ? ` (got ${got.length > 60 ? `${got.slice(0, 57)}...` : got})` : ''
  return new Error(`${label}: "${path || '(root)'}" ${dataRule(e)}${shown}`)
}
