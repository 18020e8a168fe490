// The spec's examples teach only what is true: every public schema and every JSON request and
// response of an operation has one, and every error example carries a code that is sent with the
// status it is shown under. The ErrorCode table in the spec agrees with the server's one list of
// codes. That each example validates against its schema is the spec lint's check, made once
// (`npm run lint:spec`: Spectral's oas3-valid-media-example and the project's schema-examples rule,
// .spectral.yaml; test/system/spec-rules.test.ts shows that rule refusing a wrong example).
import t from 'tap'
import { errorCodes } from '../../plugins/errors/codes.js'
import { deref, type JsonSchema } from '../../plugins/spec/document.js'
import { spec } from '../helpers/app.js'

type Media = { schema?: unknown; example?: unknown; examples?: Record<string, { value: unknown }> }
type Response = { content?: Record<string, Media>; $ref?: string }

const doc = spec.document
const resolve = <T>(node: unknown): T => deref(doc, node) as T

/** Every example of a media type, named. */
function mediaExamples(media: Media): [string, unknown][] {
  const out: [string, unknown][] = []
  if (media.example !== undefined) out.push(['example', media.example])
  for (const [name, e] of Object.entries(media.examples ?? {})) out.push([name, e.value])
  return out
}

t.test('every public schema has an example', async (t) => {
  for (const [name, written] of Object.entries(doc.components.schemas)) {
    const examples = (spec.schema(name).examples as unknown[] | undefined) ?? []
    if ((written as JsonSchema)['x-internal'] !== true) t.ok(examples.length > 0, `${name} has an example`)
  }
})

t.test('every operation: each JSON request and response has examples; error codes fit their status', async (t) => {
  for (const op of spec.operations.values()) {
    const body = resolve<{ content?: Record<string, Media> } | undefined>(op.requestBody)
    for (const [type, media] of Object.entries(body?.content ?? {})) {
      t.ok(mediaExamples(media).length > 0, `${op.operationId} request (${type}) has an example`)
    }
    for (const [status, written] of Object.entries(op.responses as Record<string, Response>)) {
      const response = resolve<Response>(written)
      const media = response.content?.['application/json']
      if (!media) continue
      const examples = mediaExamples(media)
      t.ok(examples.length > 0, `${op.operationId} ${status} has an example`)
      for (const [name, value] of examples) {
        if (Number(status) >= 400) {
          const code = (value as { code: keyof typeof errorCodes }).code
          t.equal(errorCodes[code]?.status, Number(status), `${op.operationId} ${status} ${name}: \`${code}\` is sent with ${status}`)
          const oauth = value as { error?: string; error_description?: string }
          if (oauth.error !== undefined) {
            // error is an RFC 6749 code: code itself when code is one (changed by design from
            // "error equals code", which sent clients codes the RFC does not have).
            const rfcCodes = spec.schema('OAuthErrorCode').enum as string[]
            t.ok(rfcCodes.includes(oauth.error), `${op.operationId} ${status} ${name}: error is an RFC 6749 code`)
            if (rfcCodes.includes(code)) t.equal(oauth.error, code, `${op.operationId} ${status} ${name}: error equals code, an RFC code`)
            t.match(
              oauth.error_description,
              /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/,
              'error_description uses only the characters RFC 6749 §5.2 allows',
            )
          }
        }
      }
    }
  }
})

t.test("the spec's ErrorCode table gives each code the status the server sends it with", async (t) => {
  const table = String(spec.schema('ErrorCode').description)
  const rows = [...table.matchAll(/^\| `(\w+)` \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])] as const)
  const enumerated = spec.schema('ErrorCode').enum as string[]
  t.same(rows.map(([code]) => code).sort(), [...enumerated].sort(), 'one row per code of the enum')
  t.same(Object.keys(errorCodes).sort(), [...enumerated].sort(), 'the server knows exactly the codes of the enum')
  for (const [code, status] of rows) t.equal(errorCodes[code as keyof typeof errorCodes]?.status, status, `${code}: ${status}`)
})
