// Renders the latest results (bench/results/) into docs/performance.md's figures and bench/README.md's
// ablation table (`npm run docs:performance`); a full run of the bench does it too.
// test/pure/performance-page.test.ts fails when a page differs from what the results render.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RENDERED } from './lib/page.js'
import { root } from './lib/paths.js'

for (const { page, render } of RENDERED) {
  const file = join(root, ...page)
  const before = readFileSync(file, 'utf8')
  const after = render(before)
  if (after !== before) writeFileSync(file, after)
  process.stdout.write(`${page.join('/')}: ${after === before ? 'up to date' : 'rendered again'}\n`)
}
