// The JSON body parser: secure-json-parse (as Fastify's own), with a message for each refusal.
// Fastify's parser answers a `__proto__` key "not valid JSON", which sends a client looking for
// a syntax error in valid JSON; this one says which key is refused and why.
// JSON is UTF-8 (RFC 8259 §8.1). Fastify decodes a body as UTF-8 replacing what is not with
// U+FFFD, so a name sent in Latin-1 ("Ren\xe9e") would be stored as "Ren\ufffde" and answered
// 200; here such a body is refused, naming the first byte that is not UTF-8. A charset parameter
// changes nothing (the media type defines none, §11); the hint names it when it says another.
// A \u escape of a lone surrogate (\ud800 with no pair) is valid JSON syntax but no character
// (RFC 8259 §8.2): stored, it would come back out in GET /leads.json, whose strict readers
// (serde_json, for one) then refuse the whole log. It is refused here too, naming the field.
// A body nested deeper than any operation reads (MAX_DEPTH) is refused before anything walks
// it: the walk here is a loop, not a recursion, and what reads the value after (Ajv, the MCP
// SDK, JSON.stringify when a value is echoed) never meets a depth that exhausts the stack.
import { isUtf8 } from 'node:buffer'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import sjson from 'secure-json-parse'
import { AppError, UnreadableBody } from '../errors/codes.js'
import { badByte } from './utf8.js'

/** secure-json-parse's refusal of `__proto__` and `constructor.prototype` keys. */
const FORBIDDEN = /forbidden prototype property/

export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw new UnreadableBody('The request body is empty.', 'send a JSON object in the body')
  let value: unknown
  try {
    value = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' })
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
  const problem = walk(value, SURROGATE_ESCAPE.test(text))
  if (problem?.kind === 'depth') {
    throw new UnreadableBody(
      `The request body nests arrays and objects more than ${MAX_DEPTH} levels deep.`,
      `send the JSON the operation documents: none of its values nests more than a few levels`,
    )
  }
  if (problem?.kind === 'surrogate') {
    const where = problem.path
    throw new UnreadableBody(
      `The request body has a string that is not Unicode text: ${where === '' ? 'the body' : `\`${where}\``} holds a lone surrogate (a \\u escape from D800 to DFFF without its pair).`,
      'write a character beyond U+FFFF as a surrogate pair (\\ud83c\\udfdb for 🏛) or as its UTF-8 bytes; a lone surrogate is no character',
    )
  }
  return value
}

/** A \u escape of a surrogate (a lone one or one of a pair: the walk tells them apart). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

/**
 * How deep a body may nest: serde_json's default recursion limit, far beyond any body an
 * operation or an MCP message has (a few levels), far below what a recursion would exhaust.
 */
export const MAX_DEPTH = 128

type Problem = { kind: 'depth' } | { kind: 'surrogate'; path: string }

/**
 * The first problem of a parsed body, depth first: nesting deeper than MAX_DEPTH, or (when
 * `surrogates`) the path of the first string or key that is not well-formed UTF-16. A loop over
 * a stack of its own: no depth of input can exhaust the call stack.
 */
function walk(body: unknown, surrogates: boolean): Problem | undefined {
  const stack: [value: unknown, path: string, depth: number][] = [[body, '', 0]]
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, path, depth] = next
    if (typeof value === 'string') {
      if (surrogates && !value.isWellFormed()) return { kind: 'surrogate', path }
      continue
    }
    if (typeof value !== 'object' || value === null) continue
    if (depth >= MAX_DEPTH) return { kind: 'depth' }
    const entries = Object.entries(value)
    // Pushed last first, so the first key is looked at first (the path named is the first in the body).
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i] as [string, unknown]
      const at = Array.isArray(value) ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`
      if (surrogates && !key.isWellFormed()) return { kind: 'surrogate', path: at }
      stack.push([item, at, depth + 1])
    }
  }
  return undefined
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)/i

/** The body as text: UTF-8, else refused, saying where it stops being UTF-8. */
export function utf8Body(body: Buffer, contentType: string | undefined): string {
  if (isUtf8(body)) return body.toString('utf8')
  const charset = CHARSET.exec(contentType ?? '')?.[1]
  const declared = charset && !/^utf-?8$/i.test(charset) ? ` (the Content-Type says charset=${charset})` : ''
  throw new UnreadableBody(
    `The request body is not valid UTF-8: ${badByte(body)} begins no UTF-8 character.`,
    `send the JSON as UTF-8, the only encoding JSON has${declared}: é, for one, is the two bytes 0xc3 0xa9`,
  )
}

/** Replaces Fastify's JSON parser (call before any route or encapsulated plugin is added). */
export function useJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request: FastifyRequest, body, done) => {
    try {
      done(null, parseJsonBody(utf8Body(body as Buffer, request.headers['content-type'])))
    } catch (err) {
      done(err as Error, undefined)
    }
  })
}
