// The one validator: Ajv (JSON Schema 2020-12, formats), for request parts, MCP tool arguments
// and the studio's data files alike. Bodies and data are validated strictly (no type coercion,
// unknown fields refused, never dropped; NaN and Infinity are not numbers); query strings and
// headers coerce, as they arrive as text, but a number only from a finite decimal number as JSON
// writes one (Ajv alone would take `Infinity`, `1e400`, `0x10` and ` 5`).
import type { ValidateFunction } from 'ajv'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

function makeAjv(coerce: boolean): Ajv2020 {
  // verbose: errors carry their schema, so a property's `x-hint` can become the hint.
  const ajv = new Ajv2020({
    allErrors: false,
    coerceTypes: coerce,
    removeAdditional: false,
    useDefaults: true,
    verbose: true,
    strict: false,
    strictNumbers: true,
    // The schemas are the spec's, which is linted (npm run lint:spec) and checked against the
    // OpenAPI schema at every start (fastify-openapi-glue); checking each again against JSON
    // Schema's meta-schema would compile that meta-schema in every process (~50 ms a start).
    validateSchema: false,
  })
  ;(addFormats as unknown as (a: Ajv2020) => void)(ajv)
  return ajv
}

const strict = makeAjv(false)
const text = makeAjv(true)

/**
 * Compiled validators by their schema's JSON. Ajv keeps its own by schema object, but each app
 * reads the spec afresh, so a process that builds several apps (a test file builds dozens) would
 * compile the same schemas again: a sixth of such a file's CPU (test/app/webhooks.test.ts, 1.5 of
 * 9.4 s). Bounded by the schemas of the spec and the data files; a server builds one app.
 */
const compiled = new Map<string, ValidateFunction>()
const memo = (kind: string, schema: object, compile: () => ValidateFunction): ValidateFunction => {
  const key = `${kind}:${JSON.stringify(schema)}`
  let validate = compiled.get(key)
  if (!validate) {
    validate = compile()
    compiled.set(key, validate)
  }
  return validate
}

/** A validator for JSON data: bodies, tool arguments, data files. */
export function compileStrict(schema: object): ValidateFunction {
  return memo('strict', schema, () => strict.compile(schema))
}

/** A number as JSON writes one (RFC 8259 §6): what a numeric query parameter or header may be. */
const DECIMAL = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/

type PropertySchema = { type?: unknown }

const isNumeric = (schema: PropertySchema): boolean => [schema.type].flat().some((type) => type === 'number' || type === 'integer')

/** The numeric properties of a text part's schema (an object of query parameters, of headers, of path parameters). */
function numericProperties(schema: object): [string, PropertySchema][] {
  const properties = (schema as { properties?: Record<string, PropertySchema> }).properties ?? {}
  return Object.entries(properties).filter(([, property]) => typeof property === 'object' && isNumeric(property))
}

/**
 * A validator for values that arrive as text (query strings, headers): types are coerced. A
 * numeric one is first held to DECIMAL and to a finite value: `?limit=Infinity`, `1e400` or
 * `0x10` fails as a value of the wrong type (the error Ajv gives `abc`), never reaching a handler.
 */
export function compileText(schema: object): ValidateFunction {
  return memo('text', schema, () => compileTextUncached(schema))
}

function compileTextUncached(schema: object): ValidateFunction {
  const validate = text.compile(schema)
  const numeric = numericProperties(schema)
  if (numeric.length === 0) return validate
  const checked = ((data: unknown) => {
    for (const [name, property] of numeric) {
      const value = (data as Record<string, unknown> | null | undefined)?.[name]
      if (typeof value === 'string' && !(DECIMAL.test(value) && Number.isFinite(Number(value)))) {
        const type = [property.type].flat().find((t) => t === 'integer' || t === 'number')
        checked.errors = [
          {
            keyword: 'type',
            instancePath: `/${name}`,
            schemaPath: `#/properties/${name}/type`,
            params: { type },
            message: `must be ${type}`,
            schema: property.type,
            parentSchema: property,
            data: value,
          },
        ]
        return false
      }
    }
    const valid = validate(data)
    checked.errors = validate.errors ?? null
    return valid
  }) as ValidateFunction
  return checked
}

export type { ErrorObject, ValidateFunction } from 'ajv'
