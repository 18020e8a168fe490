// The rules of changing the spec, on the spec as it is (docs/architecture.md, "Changing the spec"):
// compared with the last release in spec/released/, nothing breaks unless info.version raises the
// major version (the gate of `npm run spec:diff`); and CHANGELOG.md has a section for the spec's
// version and for every released one.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { parse } from 'yaml'
import { projectRoot } from '../../config.js'
import { gate, lastRelease } from '../../lib/spec-diff.js'

const releasedDir = join(projectRoot, 'spec', 'released')
const working = parse(readFileSync(join(projectRoot, 'spec', 'openapi.yaml'), 'utf8'))
const changelog = readFileSync(join(projectRoot, 'CHANGELOG.md'), 'utf8')

/** The versions CHANGELOG.md has a section for (`## 1.3.0 …`). */
const sections = (markdown: string): string[] => [...markdown.matchAll(/^## (\d+\.\d+\.\d+)\b/gm)].map((m) => m[1] ?? '')

t.test('the working spec breaks nothing of the last release, or raises the major version', async (t) => {
  const last = lastRelease(readdirSync(releasedDir))
  if (!last) throw new Error('spec/released/ has no X.Y.Z.yaml')
  const released = parse(readFileSync(join(releasedDir, `${last}.yaml`), 'utf8'))
  t.equal(released.info.version, last, `spec/released/${last}.yaml says it is ${last}`)
  const verdict = gate({ version: last, doc: released }, { version: working.info.version, doc: working })
  t.ok(verdict.ok, verdict.message.join('\n'))
})

t.test('CHANGELOG.md has a section for the spec version and each release', async (t) => {
  const versions = sections(changelog)
  t.ok(
    versions.includes(working.info.version),
    `CHANGELOG.md has no section "## ${working.info.version}" for the spec's info.version: add one saying what changed (docs/architecture.md, "Changing the spec")`,
  )
  for (const file of readdirSync(releasedDir)) {
    const version = /^(\d+\.\d+\.\d+)\.yaml$/.exec(file)?.[1]
    if (version) t.ok(versions.includes(version), `CHANGELOG.md has a section for the released ${version}`)
  }
  t.same(
    versions,
    [...versions].sort((a, b) => b.localeCompare(a, 'en', { numeric: true })),
    'newest first',
  )
  t.same(sections('## 2.0.0 (2027-01-04)\n\ntext\n\n## 1.3.0\n'), ['2.0.0', '1.3.0'], 'what a section heading is')
  t.notOk(sections(changelog.replace(/^## 1\.3\.0/m, '## 1.2.0')).includes('1.3.0'), 'a version without its section is seen missing')
})
