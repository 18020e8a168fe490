// The server bundle checks the spec at start with an OpenAPI 3.1 validator precompiled at build
// time (scripts/precompiled-openapi-validator.mjs) instead of the one fastify-openapi-glue's
// validator compiles at every start. Here both judge the project's spec and broken variants of it:
// the same verdict and the same errors, or the bundle would start on a spec the published
// validator refuses (or the reverse).
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { loadSpec } from '../../plugins/spec/load.js'
import { oas31ValidatorSource } from '../../scripts/precompiled-openapi-validator.mjs'
import { testdir } from '../helpers/folders.js'

type Check = ((doc: unknown) => boolean) & { errors?: { instancePath: string; keyword: string }[] | null }

const file = join(testdir(t, {}), 'oas-3.1.mjs')
writeFileSync(file, oas31ValidatorSource())
/** The precompiled validator (imported once; each test awaits it). */
const precompiled = import(pathToFileURL(file).href).then((m) => m.default as Check)
/** The method the bundle's subclass overrides: not in the published types, so asserted below. */
type Compiling = { getAjvValidator?: (version: string) => Check }
const publishedValidator = new Validator() as unknown as Compiling

const verdict = (check: Check, doc: unknown) => {
  const valid = check(doc)
  return { valid, errors: (check.errors ?? []).map((e) => `${e.instancePath} ${e.keyword}`).sort() }
}

const spec = loadSpec() as unknown as Record<string, unknown>
// biome-ignore lint/suspicious/noExplicitAny: each variant breaks the document somewhere different
type Loose = Record<string, any>
const broken: [string, (doc: Loose) => void][] = [
  ['no info', (d) => delete d.info],
  ['info.version a number', (d) => (d.info.version = 1)],
  ['a path not starting with /', (d) => (d.paths['project_metadata.json'] = d.paths['/project_metadata.json'])],
  ['an operation whose responses is a string', (d) => (d.paths['/project_metadata.json'].get.responses = 'ok')],
  ['a parameter without "in"', (d) => d.paths['/project_metadata.json'].get.parameters?.push({ name: 'x', schema: { type: 'string' } })],
  ['an unknown field in an operation', (d) => (d.paths['/project_metadata.json'].get.surprise = true)],
  ['a security scheme of an unknown type', (d) => (d.components.securitySchemes.broken = { type: 'magic' })],
  ['a server url that is not a string', (d) => (d.servers = [{ url: 42 }])],
  ['a contact email that is not an email', (d) => (d.info.contact = { email: 'not an email' })],
  ['openapi 3.1 with a 2.0 "swagger" body', (d) => (d.definitions = {})],
]

t.type(
  publishedValidator.getAjvValidator,
  'function',
  'the published Validator still compiles through getAjvValidator, the method the bundle overrides',
)
const published = publishedValidator.getAjvValidator?.('3.1') as Check

t.test('the project spec: valid for both', async (t) => {
  const a = verdict(await precompiled, structuredClone(spec))
  const b = verdict(published, structuredClone(spec))
  t.equal(b.valid, true, 'the published validator accepts the spec')
  t.same(a, b, 'the precompiled validator agrees')
})

for (const [name, breakIt] of broken) {
  t.test(`a spec with ${name}: refused by both, with the same errors`, async (t) => {
    const doc = structuredClone(spec) as Loose
    breakIt(doc)
    const a = verdict(await precompiled, structuredClone(doc))
    const b = verdict(published, structuredClone(doc))
    t.equal(b.valid, false, 'the published validator refuses it')
    t.same(a, b, 'the precompiled validator gives the same verdict and errors')
  })
}
