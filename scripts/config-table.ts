// Writes docs/configuration.md's table from config.ts's VARIABLES (`npm run docs:config`);
// `npm test` fails when that table differs from it (test/config.test.ts).
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot, withConfigTable } from '../config.js'

const readme = join(projectRoot, 'docs', 'configuration.md')
const before = readFileSync(readme, 'utf8')
const after = withConfigTable(before)
if (after !== before) writeFileSync(readme, after)
process.stdout.write(
  after === before
    ? 'docs/configuration.md: the configuration table is up to date\n'
    : 'docs/configuration.md: the configuration table was rewritten\n',
)
