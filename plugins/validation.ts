// Request validation against the spec's schemas, with errors a person can act on.
// Bodies are validated strictly (no type coercion, unknown fields rejected, never dropped);
// query strings and headers coerce, as they arrive as text.
import type { ErrorObject, ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from './errors/codes.js'

function makeAjv(coerce: boolean): Ajv2020 {
  // verbose: errors carry their schema, so a property's `x-hint` can become the hint.
  const ajv = new Ajv2020({
    allErrors: false,
    coerceTypes: coerce,
    removeAdditional: false,
    useDefaults: true,
    verbose: true,
    strict: false,
  })
  ;(addFormats as unknown as (a: Ajv2020) => void)(ajv)
  return ajv
}

const bodyAjv = makeAjv(false)
const textAjv = makeAjv(true)

/**
 * Node lowercases request header names; Fastify lowercases header schemas only for its own
 * compiler, so ours does it (the spec writes `Idempotency-Key`).
 */
function lowerCaseHeaders(schema: { properties?: Record<string, unknown>; required?: string[] }): object {
  return {
    ...schema,
    ...(schema.properties && {
      properties: Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k.toLowerCase(), v])),
    }),
    ...(schema.required && { required: schema.required.map((k) => k.toLowerCase()) }),
  }
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === 'body') return bodyAjv.compile(schema as object) as ValidateFunction
  return textAjv.compile(httpPart === 'headers' ? lowerCaseHeaders(schema as object) : (schema as object)) as ValidateFunction
}

/** Compiles a spec schema for use outside HTTP (e.g. an MCP tool's input). */
export function compileBodySchema(schema: object): ValidateFunction {
  return bodyAjv.compile(schema)
}

const partLabel: Record<string, string> = {
  body: 'field',
  querystring: 'query parameter',
  headers: 'header',
  params: 'path parameter',
}

function listProps(schema: unknown): string {
  const props = Object.keys((schema as { properties?: object })?.properties ?? {})
  return props.map((p) => `\`${p}\``).join(', ')
}

/** Turns the first schema violation into an invalid_request with a message and a hint. */
export function validationError(errors: ErrorObject[], part = 'body'): AppError {
  const e = errors[0]
  const label = partLabel[part] ?? 'field'
  if (!e) return new AppError('invalid_request')
  const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.')
  const where = part === 'body' ? 'The request body' : `The ${part === 'querystring' ? 'query string' : part}`
  const parent = e.parentSchema as Record<string, unknown> | undefined
  switch (e.keyword) {
    case 'required': {
      const name = String(e.params.missingProperty)
      const full = path ? `${path}.${name}` : name
      return new AppError('invalid_request', `${where} is missing the ${label} \`${full}\`.`, `${label} \`${full}\` is required`)
    }
    case 'additionalProperties': {
      const name = String(e.params.additionalProperty)
      return new AppError(
        'invalid_request',
        `${where} has the unknown ${label} \`${name}\`.`,
        `remove \`${name}\`; accepted ${label}s are ${listProps(parent)}`,
      )
    }
    case 'type': {
      if (!path && part === 'body') {
        return new AppError(
          'invalid_request',
          `The request body must be a JSON object, not ${describe(e.data)}.`,
          `send a JSON object with ${listProps(e.schema === 'object' ? parent : undefined) || 'the documented fields'}`,
        )
      }
      return new AppError(
        'invalid_request',
        `The ${label} \`${path}\` must be ${article(String(e.params.type))}.`,
        `${label} \`${path}\` must be ${article(String(e.params.type))}, not ${describe(e.data)}`,
      )
    }
    default: {
      const hint = typeof parent?.['x-hint'] === 'string' ? parent['x-hint'] : `${label} \`${path}\` ${e.message ?? 'is invalid'}`
      return new AppError('invalid_request', `The ${label} \`${path}\` is invalid.`, hint)
    }
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`
}

function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return article(typeof value)
}

export default fp(
  async (app) => {
    app.setValidatorCompiler(validatorCompiler)
    // Fastify's schemaErrorFormatter sees every validation failure; it becomes our AppError.
    app.setSchemaErrorFormatter((errors, dataVar) => validationError(errors as ErrorObject[], dataVar))
  },
  { name: 'validation', fastify: '5.x' },
)
