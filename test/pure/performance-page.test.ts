// docs/performance.md's figures and bench/README.md's ablation table are rendered from the latest
// results of the bench (bench/results/), never written by hand: a page that differs from what the
// results render fails here (`npm run docs:performance` renders them again).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { RENDERED, withAblation, withFigures } from '../../bench/lib/page.js'
import { projectRoot } from '../../config.js'

for (const { page, render } of RENDERED) {
  t.test(`${page.join('/')} shows the committed results`, async (t) => {
    const text = readFileSync(join(projectRoot, ...page), 'utf8')
    t.equal(render(text), text, `${page.join('/')} is what bench/results/ renders; run \`npm run docs:performance\``)
  })
}

t.test('the figures come from the results: a new result changes the page', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'performance-page-'))
  const page = readFileSync(join(projectRoot, 'docs', 'performance.md'), 'utf8')
  const empty = withFigures(page, dir)
  t.match(empty, /## `npm run bench`\n\nNo committed results yet\./, 'no results: said so')
  const ablation = {
    when: '2026-12-01T09:30:00.000Z',
    machine: { cpus: 2, cpuModel: 'Test CPU', node: 'v20.0.0' },
    settings: { rounds: 3, durationS: 6 },
    table: [{ internal: 'id-pool', figure: 'submitLead (SQLite) req/s', unit: 'req/s', withInternal: 5100, stock: 4000, gainPct: 27.5 }],
    decisions: [{ internal: 'id-pool', verdict: 'keep: buys 27.5 % on submitLead (SQLite) req/s' }],
  }
  writeFileSync(join(dir, 'ablation.json'), JSON.stringify(ablation))
  const rendered = withFigures(page, dir)
  t.match(rendered, /Made 2026-12-01 09:30 UTC on Test CPU, 2 CPUs/, 'when, and on what')
  t.match(rendered, /\| id-pool \| submitLead \(SQLite\) req\/s \| 5100 req\/s \| 4000 req\/s \| 27\.5 % \|/, 'the row')
  t.match(
    withAblation(readFileSync(join(projectRoot, 'bench', 'README.md'), 'utf8'), dir),
    /\| id-pool \| keep: buys 27\.5 %/,
    'README too',
  )
  t.notMatch(rendered, /load average/i, 'no load averages')
})
