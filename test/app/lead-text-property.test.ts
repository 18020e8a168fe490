// The spec and intake agree on text, whatever it holds (issue 36): names and notes drawn from the
// whole of Unicode (C0, C1, format and bidi characters, zero-width ones, line breaks of every
// spelling, Unicode tags, lone surrogates written as \u escapes in the JSON) are stored exactly
// when the stored entry is valid against the spec's LeadLogEntry (and is Unicode text), on the
// API and through request_consultation; what is stored is that entry, and what is accepted was
// valid against the spec's request schema as sent. fast-check draws the cases; on the suite's
// storage (SQLite, or PostgreSQL).
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import fc from 'fast-check'
import t from 'tap'
import { cleanLine, cleanText } from '../../lib/text.js'
import { deref } from '../../plugins/spec/document.js'
import { call, leadOf, spec, tokenFor } from '../helpers/app.js'
import { connect, live, mcpToken, textOf } from '../helpers/mcp.js'

// An Ajv of the test's own, as a validating proxy in front of the server would have.
const ajv = new Ajv2020({ strict: false, allErrors: true })
;(addFormats as unknown as (a: Ajv2020) => void)(ajv)
const schema = (name: string) => ajv.compile(deref(spec.document, spec.document.components.schemas[name]) as object)
const validEntry = schema('LeadLogEntry')
const validLead = schema('Lead')

/** Characters that cleaning removes, turns into a space or a line break, or keeps though unseen. */
const SPECIAL = [
  ...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)),
  ...Array.from({ length: 0x21 }, (_, i) => String.fromCharCode(0x7f + i)),
  ...'\u00AD\u0600\u061C\u06DD\u070F\u115F\u180E\u200B\u200C\u200D\u200E\u200F\u2028\u2029\u202A\u202B\u202C\u202D\u202E\u2060\u2062\u2066\u2067\u2068\u2069\u206F\u3164\uFE0F\uFEFF\uFFA0\uFFF9\uFFFE',
  '\u{E0001}',
  '\u{E0041}',
  '\u{1D173}',
  '\u{110BD}',
  '\u{E0100}',
  '\r\n',
]
const char = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 3, arbitrary: fc.constantFrom('a', 'Z', 'é', 'ß', '王', 'ب', 'я', '🏛', ' ', '.', '-', '1', "'") },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  // A lone surrogate: JSON.stringify writes it as a \u escape, which is no character (RFC 8259 §8.2).
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
)
const text = (maxLength: number) => fc.array(char, { maxLength }).map((chars) => chars.join(''))
const drawn = fc.record({ name: text(12), note: fc.option(text(40), { nil: undefined }) })

/** What is stored of these fields, if the lead is valid once cleaned (lib/text.ts); undefined if not. */
function expectedEntry(fields: { name: string; note?: string | undefined }): Record<string, unknown> | undefined {
  const sent = [fields.name, fields.note ?? ''].every((s) => s.isWellFormed())
  const note = fields.note === undefined ? '' : cleanText(fields.note)
  const entry = {
    id: '01939f2e-0000-7000-8000-000000000001',
    ...leadOf(1),
    name: cleanLine(fields.name),
    ...(note !== '' && { note }),
    received_at: '2026-11-22T10:15:00.000Z',
    client_id: null,
    source: 'api',
  }
  return sent && validEntry(entry) ? entry : undefined
}

const body = (fields: { name: string; note?: string | undefined }) => ({
  ...leadOf(1),
  name: fields.name,
  ...(fields.note !== undefined && { note: fields.note }),
})

/** Budgets wide enough for every draw. */
const budgets = { rateLimits: { submitLead: { max: 10_000 }, getLeads: { max: 10_000 }, mcp: { max: 10_000 } } }

t.test('API: a lead is stored exactly when its entry is valid LeadLogEntry; what is accepted was a valid Lead', async (t) => {
  const l = await live(t, budgets)
  const { app } = l
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  let stored = 0
  await fc.assert(
    fc.asyncProperty(drawn, async (fields) => {
      const expected = expectedEntry(fields)
      const res = await app.inject({
        method: 'POST',
        url: '/scripts/enquiry_backend.php',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body(fields)),
      })
      if (expected === undefined) {
        if (res.statusCode !== 400) throw new Error(`expected 400, got ${res.statusCode} ${res.body}`)
        const { message } = res.json() as { message: string }
        if (!/`name`|`note`|not Unicode text/.test(message)) throw new Error(`the refusal names no field: ${message}`)
        return
      }
      if (res.statusCode !== 200) throw new Error(`expected 200, got ${res.statusCode} ${res.body}`)
      if (!validLead(body(fields))) throw new Error(`accepted, but not a valid Lead as sent: ${ajv.errorsText(validLead.errors)}`)
      stored++
      const [entry] = await app.leads.recent(undefined, 1)
      if (!validEntry(entry)) throw new Error(`stored an invalid LeadLogEntry: ${ajv.errorsText(validEntry.errors)}`)
      if (entry?.name !== expected.name || entry?.note !== expected.note) {
        throw new Error(`stored ${JSON.stringify([entry?.name, entry?.note])}, expected ${JSON.stringify([expected.name, expected.note])}`)
      }
    }),
    { numRuns: 300 },
  )
  t.ok(stored > 10, `${stored} of 300 stored: the draws reach both sides`)
  const log = await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${token}` } })
  t.equal(log.json().length, stored, 'the whole log is valid against the spec (call() checks it) and holds just these')
})

t.test('request_consultation: the same rule through the MCP tool', async (t) => {
  const l = await live(t, budgets)
  const agent = await connect(t, l.base, await mcpToken(l, ['write:leads']))
  let stored = 0
  await fc.assert(
    fc.asyncProperty(drawn, async (fields) => {
      const expected = expectedEntry(fields)
      const before = await l.app.leads.count()
      let refusal: string | undefined
      try {
        const result = await agent.callTool({ name: 'request_consultation', arguments: { ...body(fields), consent: true } })
        if (result.isError) refusal = textOf(result)
      } catch (err) {
        // A lone surrogate: the whole message is refused as it is read (JSON-RPC parse error).
        refusal = (err as Error).message
      }
      const after = await l.app.leads.count()
      if (expected === undefined) {
        if (refusal === undefined) throw new Error('expected a refusal, the tool stored the lead')
        if (!/name|note|not Unicode text/.test(refusal)) throw new Error(`the refusal names no field: ${refusal}`)
        if (after !== before) throw new Error('refused, but stored')
        return
      }
      if (refusal !== undefined) throw new Error(`expected the lead stored, got: ${refusal}`)
      stored++
      const [entry] = await l.app.leads.recent(undefined, 1)
      if (!validEntry(entry)) throw new Error(`stored an invalid LeadLogEntry: ${ajv.errorsText(validEntry.errors)}`)
      if (entry?.name !== expected.name || entry?.note !== expected.note) {
        throw new Error(`stored ${JSON.stringify([entry?.name, entry?.note])}, expected ${JSON.stringify([expected.name, expected.note])}`)
      }
    }),
    { numRuns: 120 },
  )
  t.ok(stored > 5, `${stored} of 120 stored`)
})
