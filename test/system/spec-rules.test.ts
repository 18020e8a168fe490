// The project's own rules of the spec's lint (`npm run lint:spec`: Redocly and Spectral with
// .spectral.yaml), shown refusing what they exist to refuse (Spectral's and the OWASP ruleset's own
// rules are their authors' to test; the lint itself runs once, in `npm test`'s pretest):
// - schema-examples (spec/lint/schema-examples.js): a schema's `examples` value its schema refuses;
// - deprecations: `deprecated: true` with `x-sunset` (and `x-deprecated-at`) on an operation, a
//   parameter or a field is accepted; a deprecation without its sunset, or a sunset that is not a
//   date, is refused.
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { projectRoot } from '../../config.js'
import { testdir } from '../helpers/folders.js'

const run = promisify(execFile)
const bin = (name: string) => join(projectRoot, 'node_modules', '.bin', name)

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, edited by each case
type Doc = Record<string, any>

function variant(dir: string, name: string, edit: (doc: Doc) => void): string {
  const doc = parse(readFileSync(join(projectRoot, 'spec', 'openapi.yaml'), 'utf8'))
  edit(doc)
  const file = join(dir, `${name}.yaml`)
  writeFileSync(file, stringify(doc))
  return file
}

/**
 * Spectral's errors of the given rules (default the deprecation rules) on a document, as `rule at path` (the ruleset's
 * overrides name spec/openapi.yaml, so a variant elsewhere meets the rules they turn off).
 */
async function spectralErrors(file: string, rules = ['deprecated-has-sunset', 'deprecation-dates']): Promise<string[]> {
  const { stdout } = await run(
    bin('spectral'),
    ['lint', file, '--ruleset', join(projectRoot, '.spectral.yaml'), '--format', 'json', '--quiet'],
    {
      cwd: projectRoot,
      maxBuffer: 64 * 1024 * 1024,
    },
  ).catch((err: { stdout?: string; stderr?: string }) => {
    if (!err.stdout) throw new Error(`spectral failed: ${err.stderr}`)
    return { stdout: err.stdout }
  })
  return (JSON.parse(stdout) as { code: string; severity: number; path: string[] }[])
    .filter((f) => f.severity === 0 && rules.includes(f.code))
    .map((f) => `${f.code} at ${f.path.join('.')}`)
}

const deprecate = (doc: Doc) => {
  Object.assign(doc.paths['/leads.json'].get, { deprecated: true, 'x-sunset': '2027-06-30', 'x-deprecated-at': '2026-12-01' })
  Object.assign(doc.paths['/leads.json'].get.parameters[1], { deprecated: true, 'x-sunset': '2027-06-30' })
  Object.assign(doc.components.schemas.LeadFields.properties.note, { deprecated: true, 'x-sunset': '2027-03-31' })
}

t.test('deprecated with x-sunset: accepted by Spectral and Redocly', async (t) => {
  const file = variant(testdir(t, {}), 'deprecated', deprecate)
  t.same(await spectralErrors(file), [])
  const redocly = await run(bin('redocly'), ['lint', file, '--config', join(projectRoot, 'redocly.yaml'), '--format=stylish'], {
    cwd: projectRoot,
  }).then(
    () => 0,
    (err: { code: number; stdout: string }) => {
      t.comment(err.stdout)
      return err.code
    },
  )
  t.equal(redocly, 0, 'Redocly: valid')
})

t.test('a deprecation without its sunset, or a sunset that is not a date, is an error', async (t) => {
  const dir = testdir(t, {})
  const missing = variant(dir, 'missing', (doc) => {
    doc.paths['/leads.json'].get.deprecated = true
    doc.components.schemas.LeadFields.properties.note.deprecated = true
  })
  t.same(await spectralErrors(missing), [
    'deprecated-has-sunset at paths./leads.json.get',
    'deprecated-has-sunset at components.schemas.LeadFields.properties.note',
  ])
  const notADate = variant(dir, 'not-a-date', (doc) => {
    deprecate(doc)
    doc.paths['/leads.json'].get['x-sunset'] = 'next summer'
    doc.paths['/leads.json'].get['x-deprecated-at'] = '2026-13-01'
  })
  t.same(await spectralErrors(notADate), [
    'deprecation-dates at paths./leads.json.get.x-sunset',
    'deprecation-dates at paths./leads.json.get.x-deprecated-at',
  ])
})

t.test('schema-examples: a schema example its schema refuses is an error, at its place', async (t) => {
  const file = variant(testdir(t, {}), 'bad-example', (doc) => {
    // a name of spaces only: LeadFields.name's pattern refuses it
    doc.components.schemas.LeadFields.properties.name.examples = ['   ']
  })
  t.same(await spectralErrors(file, ['schema-examples']), ['schema-examples at components.schemas.LeadFields.properties.name.examples.0'])
})
