/**
 * Builds every MCP App view into a single self-contained HTML file.
 *
 *   npx tsx ui/build.ts            -> dist/ui/playbook.html, dist/ui/pricing-estimator.html
 *   npx tsx ui/build.ts playbook   -> only the named view(s)
 */
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { build } from 'vite'
import { outDir, VIEWS, type ViewName, viewConfig } from './vite.config.ts'

const requested = process.argv.slice(2)
for (const name of requested) {
  if (!(VIEWS as readonly string[]).includes(name)) {
    console.error(`Unknown view "${name}". Known views: ${VIEWS.join(', ')}`)
    process.exit(2)
  }
}
const views = (requested.length ? requested : [...VIEWS]) as ViewName[]

for (const view of views) {
  await build(viewConfig(view))
  const file = path.join(outDir, `${view}.html`)
  const html = await readFile(file, 'utf8')
  // Guard the single-file contract: no external script/style/font references.
  const external = html.match(/<(script|link)\b[^>]*\b(src|href)=["'](?!data:)[^"']+["']/gi)
  if (external) {
    throw new Error(`${view}: build emitted external references: ${external.join(', ')}`)
  }
  const { size } = await stat(file)
  console.log(`ui: ${path.relative(process.cwd(), file)}  ${(size / 1024).toFixed(1)} kB`)
}
