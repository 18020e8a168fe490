// The one validator: Ajv (JSON Schema 2020-12, formats), for request parts, MCP tool arguments
// and the studio's data files alike. Bodies and data are validated strictly (no type coercion,
// unknown fields refused, never dropped; NaN and Infinity are not numbers); query strings and
// headers coerce, as they arrive as text.
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

/** A validator for JSON data: bodies, tool arguments, data files. */
export function compileStrict(schema: object): ValidateFunction {
  return strict.compile(schema)
}

/** A validator for values that arrive as text (query strings, headers): types are coerced. */
export function compileText(schema: object): ValidateFunction {
  return text.compile(schema)
}

export type { ErrorObject, ValidateFunction } from 'ajv'
