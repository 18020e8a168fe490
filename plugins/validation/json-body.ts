// The JSON body parser: secure-json-parse (as Fastify's own), with a message for each refusal.
// Fastify's parser answers a `__proto__` key "not valid JSON", which sends a client looking for
// a syntax error in valid JSON; this one says which key is refused and why.
import type { FastifyInstance } from 'fastify'
import sjson from 'secure-json-parse'
import { AppError, UnreadableBody } from '../errors/codes.js'

/** secure-json-parse's refusal of `__proto__` and `constructor.prototype` keys. */
const FORBIDDEN = /forbidden prototype property/

export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new UnreadableBody('The request body is empty.', 'send a JSON object in the body')
  try {
    return sjson.parse(text, { protoAction: 'error', constructorAction: 'error' })
  } catch (err) {
    if (FORBIDDEN.test((err as Error).message)) {
      throw new AppError(
        'invalid_request',
        'The request body has a key named __proto__ (or a constructor with a prototype), which is refused.',
        'remove that key: it would replace the prototype of the object it is in',
      )
    }
    throw new UnreadableBody(
      'The request body is not valid JSON.',
      'check the body for a syntax error, such as a missing quote or a trailing comma',
    )
  }
}

/** Replaces Fastify's JSON parser (call before any route or encapsulated plugin is added). */
export function useJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
}
