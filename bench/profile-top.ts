// Top self-time functions (and packages) of a V8 .cpuprofile, e.g. one written by
// `npm run bench -- --cpu-prof --only=issueToken` into bench/profiles/.
//
//   node --import tsx bench/profile-top.ts bench/profiles/api-….cpuprofile [--top=25] [--skip=3]
// --skip=N ignores the first N seconds of the profile (start-up). Three tables: self time by
// function, self time by package or file, and inclusive time by package or file.
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
  parent?: number
}
interface Profile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

const files = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const top = Number(/--top=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 25)
const skipUs = Number(/--skip=([\d.]+)/.exec(process.argv.join(' '))?.[1] ?? 0) * 1e6
if (files.length === 0) {
  process.stderr.write('usage: profile-top.ts <file.cpuprofile> [--top=25] [--skip=seconds]\n')
  process.exit(2)
}

/** node_modules/<pkg> (or @scope/pkg), a project file, node: internals, or a V8 pseudo-frame. */
function owner(url: string, fn: string): string {
  if (!url) return `(${fn || 'native'})`
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (m?.[1]) return m[1]
  if (url.startsWith('node:')) return 'node internals'
  const project = /\/(dist\/.*|bench\/.*)$/.exec(url)
  return project?.[1] ?? url
}

for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile
  const byId = new Map(p.nodes.map((n) => [n.id, n]))
  for (const n of p.nodes)
    for (const c of n.children ?? []) {
      const child = byId.get(c)
      if (child) child.parent = n.id
    }
  const self = new Map<number, number>()
  let total = 0
  let elapsed = 0
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0
    elapsed += dt
    if (elapsed < skipUs) return
    self.set(id, (self.get(id) ?? 0) + dt)
    total += dt
  })
  const fnTime = new Map<string, number>()
  const pkgTime = new Map<string, number>()
  let idle = 0
  for (const [id, us] of self) {
    const n = byId.get(id)
    if (!n) continue
    const { functionName, url, lineNumber } = n.callFrame
    if (functionName === '(idle)') idle += us
    const short = url.replace(/^file:\/\/.*?\/(node_modules|dist|bench)\//, '$1/')
    const key = `${functionName || '(anonymous)'}  ${short}${url ? `:${lineNumber + 1}` : ''}`
    fnTime.set(key, (fnTime.get(key) ?? 0) + us)
    const o = owner(url, functionName)
    pkgTime.set(o, (pkgTime.get(o) ?? 0) + us)
  }
  const busy = total - idle
  // Inclusive: the time with a package anywhere on the stack (each package once per sample), so a
  // plugin's hook is charged for what it calls in other packages too.
  const inclusive = new Map<string, number>()
  for (const [id, us] of self) {
    const seen = new Set<string>()
    for (let n = byId.get(id); n; n = n.parent === undefined ? undefined : byId.get(n.parent)) {
      seen.add(owner(n.callFrame.url, n.callFrame.functionName))
    }
    for (const o of seen) inclusive.set(o, (inclusive.get(o) ?? 0) + us)
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`
  const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(7)} ms`
  process.stdout.write(`\n${file}\nprofiled ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s (percentages of busy time)\n`)
  process.stdout.write('\ntop self time by function\n')
  for (const [k, us] of [...fnTime]
    .filter(([k]) => !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    process.stdout.write(`${ms(us)} ${pct(us)}  ${k}\n`)
  }
  process.stdout.write('\nself time by package / file\n')
  for (const [k, us] of [...pkgTime]
    .filter(([k]) => k !== '((idle))')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    process.stdout.write(`${ms(us)} ${pct(us)}  ${k}\n`)
  }
  process.stdout.write('\ninclusive time by package / file (on the stack)\n')
  for (const [k, us] of [...inclusive]
    .filter(([k]) => !k.startsWith('((idle))') && !k.startsWith('((root))') && !k.startsWith('((program))'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    process.stdout.write(`${ms(us)} ${pct(us)}  ${k}\n`)
  }
}
