// Request validation against the spec's schemas (Fastify's validator and error formatter), with
// errors a person can act on, and the JSON body parser whose refusals say why. The validators
// and the messages are in ajv.ts and messages.ts, shared with the MCP tools and the data-file
// loaders.
import type { FastifySchemaCompiler } from 'fastify'
import fp from 'fastify-plugin'
import { compileStrict, compileText, type ErrorObject } from '../../lib/ajv.js'
import { useJsonBodyParser } from './json-body.js'
import { validationError } from './messages.js'

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
  if (httpPart === 'body') return compileStrict(schema as object)
  return compileText(httpPart === 'headers' ? lowerCaseHeaders(schema as object) : (schema as object))
}

export default fp(
  async (app) => {
    app.setValidatorCompiler(validatorCompiler)
    // Fastify's schemaErrorFormatter sees every validation failure; it becomes our AppError.
    app.setSchemaErrorFormatter((errors, dataVar) => validationError(errors as ErrorObject[], dataVar))
    useJsonBodyParser(app)
  },
  { name: 'validation', fastify: '5.x' },
)
