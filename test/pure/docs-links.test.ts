// The README and docs/ link to each other and to the code: every relative link must name a file
// that exists and, when it names an anchor of a Markdown page, a heading of that page (GitHub's
// anchors, github-slugger). Links with a scheme (https:, mailto:) are not followed: no network here.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import GithubSlugger from 'github-slugger'
import t from 'tap'
import { projectRoot } from '../../config.js'

const pages = [
  'README.md',
  ...readdirSync(join(projectRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
]

/** The page's text outside fenced code blocks (a `#` comment in a shell block is no heading). */
function prose(text: string): string[] {
  let fenced = false
  return text.split('\n').filter((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced
      return false
    }
    return !fenced
  })
}

const anchorsOf = new Map<string, Set<string>>()
function anchors(page: string): Set<string> {
  let set = anchorsOf.get(page)
  if (!set) {
    const slugger = new GithubSlugger()
    set = new Set(
      prose(readFileSync(join(projectRoot, page), 'utf8'))
        .map((line) => /^#{1,6} (.+)$/.exec(line)?.[1])
        .filter((h): h is string => h !== undefined)
        .map((h) => slugger.slug(h.replace(/`/g, ''))),
    )
    anchorsOf.set(page, set)
  }
  return set
}

t.test('every relative link of the README and docs/ resolves, anchors included', async (t) => {
  let checked = 0
  for (const page of pages) {
    const problems: string[] = []
    for (const line of prose(readFileSync(join(projectRoot, page), 'utf8'))) {
      // Inline code is not a link: `[x](y)` in backticks is an example.
      for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? ''
        if (/^[a-z][a-z+.-]*:/i.test(target)) continue
        checked++
        const [path = '', anchor] = target.split('#')
        const file = path ? relative(projectRoot, resolve(dirname(join(projectRoot, page)), path)) : page
        if (!existsSync(join(projectRoot, file))) {
          problems.push(`${target}: no file ${file}`)
          continue
        }
        if (anchor && file.endsWith('.md') && statSync(join(projectRoot, file)).isFile() && !anchors(file).has(anchor)) {
          problems.push(`${target}: ${file} has no heading #${anchor}`)
        }
      }
    }
    t.same(problems, [], `${page}: every link resolves`)
  }
  t.ok(checked > 20, `links were found and checked (${checked})`)
})

t.test('the README maps every docs/ page', async (t) => {
  const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8')
  for (const page of pages.filter((p) => p.startsWith('docs/'))) t.match(readme, `](${page})`, `README links ${page}`)
})
