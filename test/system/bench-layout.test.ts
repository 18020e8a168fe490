// bench/ is a tool of its own, laid out one way: run.ts is the entry and nothing imports it; the
// helpers in bench/lib/ import no mode; a mode imports lib/, never another mode; and no files of
// bench/ import each other in a loop.
import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../config.js'

function sources(dir: string): string[] {
  return readdirSync(join(projectRoot, dir)).flatMap((name) => {
    const path = join(dir, name)
    return statSync(join(projectRoot, path)).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

const files = sources('bench')
/** The bench files a file imports (static and dynamic imports of relative paths), as paths from the root. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(projectRoot, file), 'utf8')
  const specs = [...text.matchAll(/(?:from|import\(|import)\s*['"](\.[^'"]+)['"]/g)].map((m) => m[1] ?? '')
  return specs
    .map((s) => relative(projectRoot, resolve(join(projectRoot, dirname(file)), s)).replace(/\.js$/, '.ts'))
    .filter((p) => p.startsWith('bench/'))
}
const graph = new Map(files.map((f) => [f, importsOf(f)]))
const mode = (f: string) => /^bench\/modes\/([^/]+)\//.exec(f)?.[1]

t.test('nothing imports bench/run.ts', async (t) => {
  t.same(
    files.filter((f) => graph.get(f)?.includes('bench/run.ts')),
    [],
  )
})

t.test('bench/lib/ imports no mode; a mode no other mode', async (t) => {
  const offenders = files.flatMap((f) =>
    (graph.get(f) ?? [])
      .filter((to) => (f.startsWith('bench/lib/') && to.startsWith('bench/modes/')) || (mode(f) && mode(to) && mode(f) !== mode(to)))
      .map((to) => `${f} -> ${to}`),
  )
  t.same(offenders, [])
})

t.test('no import cycle in bench/', async (t) => {
  const cycles: string[] = []
  const state = new Map<string, 'open' | 'done'>()
  const visit = (f: string, path: string[]) => {
    if (state.get(f) === 'done') return
    if (state.get(f) === 'open') {
      cycles.push([...path.slice(path.indexOf(f)), f].join(' -> '))
      return
    }
    state.set(f, 'open')
    for (const to of graph.get(f) ?? []) visit(to, [...path, f])
    state.set(f, 'done')
  }
  for (const f of files) visit(f, [])
  t.same(cycles, [])
  t.ok(files.length > 20 && (graph.get('bench/run.ts')?.length ?? 0) > 0, 'the imports were read')
})

// The ablation measures each remaining internal against its stock part by applying
// bench/ablation/<name>.patch to a copy of the sources: a patch the code has moved away from would
// stop the next ablation run halfway, so each must still apply to the sources as they are.
t.test("each ablation patch applies to today's sources", async (t) => {
  const dir = join(projectRoot, 'bench', 'ablation')
  const patches = readdirSync(dir).filter((f) => f.endsWith('.patch'))
  t.ok(patches.length > 0, 'bench/ablation/ holds the patches')
  for (const patch of patches) {
    const check = spawnSync('git', ['apply', '--check', '--whitespace=nowarn', join(dir, patch)], { cwd: projectRoot, encoding: 'utf8' })
    t.equal(
      check.status,
      0,
      `${patch} applies (else make it again from a real edit: bench/README.md, "The ablation")${check.stderr ? `: ${check.stderr.trim()}` : ''}`,
    )
  }
})

// Each internal the ablation lists has its patch, and each patch an internal: a patch left over
// from an internal that went back to its stock part would no longer be measured, only kept.
t.test('the ablation lists exactly the internals that have a patch', async (t) => {
  const { INTERNALS } = await import('../../bench/modes/ablation/internals.js')
  const patches = readdirSync(join(projectRoot, 'bench', 'ablation'))
    .filter((f) => f.endsWith('.patch'))
    .map((f) => f.replace(/\.patch$/, ''))
    .sort()
  t.same(INTERNALS.map((i) => i.name).sort(), patches)
})
