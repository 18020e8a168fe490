// The docs state current facts (issue 33): no dated readings, load averages or "measured on this
// machine" passages in README.md and docs/. History lives in git and CHANGELOG.md; figures live in
// docs/performance.md, rendered from the bench's results (each table with the command and the
// time that made it), and so it is the one page left out here.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../config.js'

const pages = [
  'README.md',
  ...readdirSync(join(projectRoot, 'docs'))
    .filter((f) => f.endsWith('.md') && f !== 'performance.md')
    .map((f) => `docs/${f}`),
]

/** Dates that are names, not readings: the MCP protocol revisions the docs discuss. */
const REVISIONS = new Set(['2025-03-26', '2025-06-18', '2025-11-25', '2026-07-28'])

/** What reads as a diary: a reading of this machine, of a day, of its load. */
const READING =
  /load average|\bloadavg\b|\bmeasured (on|here|at)\b|on this machine|this \d+-core machine|shared and loaded|\b\d+ runs? of \d{4}-/i

/** The page's prose: fenced blocks and code spans (examples, commands, timestamps) left out. */
const prose = (text: string): string => text.replace(/^\s*```[\s\S]*?^\s*```/gm, '').replace(/`[^`\n]*`/g, '')

for (const page of pages) {
  t.test(`${page}: current facts, no dated readings`, async (t) => {
    const text = prose(readFileSync(join(projectRoot, page), 'utf8'))
    const lines = text.split('\n')
    const readings = lines.filter((l) => READING.test(l))
    t.same(readings, [], 'no reading of a machine, a day or a load (figures belong in docs/performance.md)')
    const dates = lines.flatMap((l) => [...l.matchAll(/\b\d{4}-\d{2}-\d{2}\b/g)].map((m) => m[0])).filter((d) => !REVISIONS.has(d))
    t.same(dates, [], 'no date in the prose but a protocol revision (a date in an example is in code)')
  })
}

t.test('the check finds what it looks for', async (t) => {
  t.match('Measured on this 2-core machine (shared and loaded; two runs of 2026-11-24)', READING)
  t.match('first start 7.9 s at load average 3.1', READING)
  t.equal(prose('a `2026-11-22T10:15:00Z` example\n```sh\nnpm run x -- --since 2026-11-22\n```\n'), 'a  example\n\n')
})
