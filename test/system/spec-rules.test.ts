// The project's own rules of the spec's lint (`npm run lint:spec`: Redocly and Spectral with
// .spectral.yaml), shown refusing what they exist to refuse (Spectral's and the OWASP ruleset's own
// rules are their authors' to test; the lint itself runs once, in `npm test`'s pretest):
// - schema-examples (spec/lint/schema-examples.js): a schema's `examples` value its schema refuses;
// - deprecations: `deprecated: true` with `x-sunset` (and `x-deprecated-at`) on an operation, a
//   parameter or a field is accepted; a deprecation without its sunset, or a sunset that is not a
//   date, is refused.
// Spectral runs once, on every variant of the spec at once, with the project's own rules as
// .spectral.yaml writes them (without the rulesets it extends, whose rules are not under test):
// this file takes 8.6 s of CPU (Redocly included) where a Spectral run per variant with every
// ruleset took 25.
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { projectRoot } from '../../config.js'
import { testdir } from '../helpers/folders.js'

const run = promisify(execFile)
const bin = (name: string) => join(projectRoot, 'node_modules', '.bin', name)

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, edited by each case
type Doc = Record<string, any>

const deprecate = (doc: Doc) => {
  Object.assign(doc.paths['/leads.json'].get, { deprecated: true, 'x-sunset': '2027-06-30', 'x-deprecated-at': '2026-12-01' })
  Object.assign(doc.paths['/leads.json'].get.parameters[1], { deprecated: true, 'x-sunset': '2027-06-30' })
  Object.assign(doc.components.schemas.LeadFields.properties.note, { deprecated: true, 'x-sunset': '2027-03-31' })
}

/** The spec's variants under test, each the spec with one edit. */
const VARIANTS: Record<string, (doc: Doc) => void> = {
  deprecated: deprecate,
  missing: (doc) => {
    doc.paths['/leads.json'].get.deprecated = true
    doc.components.schemas.LeadFields.properties.note.deprecated = true
  },
  'not-a-date': (doc) => {
    deprecate(doc)
    doc.paths['/leads.json'].get['x-sunset'] = 'next summer'
    doc.paths['/leads.json'].get['x-deprecated-at'] = '2026-13-01'
  },
  // a name of spaces only: LeadFields.name's pattern refuses it
  'bad-example': (doc) => {
    doc.components.schemas.LeadFields.properties.name.examples = ['   ']
  },
}

const dir = testdir(t, {})
const file = (name: string) => join(dir, `${name}.yaml`)
const written: Doc = parse(readFileSync(join(projectRoot, 'spec', 'openapi.yaml'), 'utf8'))
for (const [name, edit] of Object.entries(VARIANTS)) {
  const doc = structuredClone(written)
  edit(doc)
  writeFileSync(file(name), stringify(doc))
}

/** .spectral.yaml's own rules alone: its rules that are not `off`, its functions (found from `dir`). */
function ownRuleset(): string {
  const ruleset = parse(readFileSync(join(projectRoot, '.spectral.yaml'), 'utf8')) as Doc
  const rules = Object.fromEntries(Object.entries(ruleset.rules as Doc).filter(([, rule]) => rule !== 'off'))
  const own = join(dir, 'own.spectral.yaml')
  writeFileSync(
    own,
    stringify({ functionsDir: relative(dir, join(projectRoot, ruleset.functionsDir)), functions: ruleset.functions, rules }),
  )
  return own
}

/** Spectral's errors on every variant, by variant, as `rule at path`. */
const findings: Promise<Map<string, { code: string; at: string }[]>> = run(
  bin('spectral'),
  ['lint', ...Object.keys(VARIANTS).map(file), '--ruleset', ownRuleset(), '--format', 'json', '--quiet'],
  { cwd: projectRoot, maxBuffer: 64 * 1024 * 1024 },
)
  .catch((err: { stdout?: string; stderr?: string }) => {
    if (!err.stdout) throw new Error(`spectral failed: ${err.stderr}`)
    return { stdout: err.stdout }
  })
  .then(({ stdout }) => {
    const out = new Map<string, { code: string; at: string }[]>()
    for (const f of JSON.parse(stdout) as { code: string; severity: number; path: string[]; source: string }[]) {
      if (f.severity !== 0) continue
      out.set(f.source, [...(out.get(f.source) ?? []), { code: f.code, at: `${f.code} at ${f.path.join('.')}` }])
    }
    return out
  })

/** The errors of the given rules (default the deprecation rules) on one variant. */
async function spectralErrors(name: string, rules = ['deprecated-has-sunset', 'deprecation-dates']): Promise<string[]> {
  return ((await findings).get(file(name)) ?? []).filter((f) => rules.includes(f.code)).map((f) => f.at)
}

t.test('deprecated with x-sunset: accepted by Spectral and Redocly', async (t) => {
  t.same(await spectralErrors('deprecated'), [])
  const redocly = await run(
    bin('redocly'),
    ['lint', file('deprecated'), '--config', join(projectRoot, 'redocly.yaml'), '--format=stylish'],
    {
      cwd: projectRoot,
    },
  ).then(
    () => 0,
    (err: { code: number; stdout: string }) => {
      t.comment(err.stdout)
      return err.code
    },
  )
  t.equal(redocly, 0, 'Redocly: valid')
})

t.test('a deprecation without its sunset, or a sunset that is not a date, is an error', async (t) => {
  t.same(await spectralErrors('missing'), [
    'deprecated-has-sunset at paths./leads.json.get',
    'deprecated-has-sunset at components.schemas.LeadFields.properties.note',
  ])
  t.same(await spectralErrors('not-a-date'), [
    'deprecation-dates at paths./leads.json.get.x-sunset',
    'deprecation-dates at paths./leads.json.get.x-deprecated-at',
  ])
})

t.test('schema-examples: a schema example its schema refuses is an error, at its place', async (t) => {
  t.same(await spectralErrors('bad-example', ['schema-examples']), [
    'schema-examples at components.schemas.LeadFields.properties.name.examples.0',
  ])
})
