// The house rules that keep the layout readable, checked on the code itself: imports run one way
// (plugins never import handlers; the app hands the handler and tool registries in), and the spec
// is read from disk only by the entry points, which hand it to everything else.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import t from 'tap'
import { projectRoot } from '../config.js'

function sources(dir: string): string[] {
  return readdirSync(join(projectRoot, dir)).flatMap((name) => {
    const path = join(dir, name)
    return statSync(join(projectRoot, path)).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

const read = (path: string) => readFileSync(join(projectRoot, path), 'utf8')
const server = ['app.ts', 'server.ts', 'config.ts', ...sources('plugins'), ...sources('handlers'), ...sources('scripts')]

t.test('no plugin imports from handlers/', async (t) => {
  const offenders = sources('plugins').filter((f) => /from ['"](\.\.\/)+handlers\//.test(read(f)))
  t.same(offenders, [], 'plugins get handlers and tools from app.ts')
})

t.test('handlers import plugins only for services and types, never a plugin registration', async (t) => {
  const offenders = sources('handlers').filter((f) => /import \w+ from ['"][./]+plugins\/[\w-]+\/index\.js['"]/.test(read(f)))
  t.same(offenders, [], 'no default (plugin) import in handlers/')
})

t.test('only the entry points read the spec from disk', async (t) => {
  const callers = server.filter((f) => /(?<!function )\bloadSpec\(\)/.test(read(f))).map((f) => relative('.', f))
  t.same(
    callers.sort(),
    [
      'app.ts',
      'scripts/catalogue.ts',
      'scripts/client-schema.ts',
      'scripts/clients.ts',
      'scripts/contract.ts',
      'scripts/webhooks.ts',
    ].sort(),
  )
})

t.test('the version is written once, in the spec', async (t) => {
  const version = /^\s+version: (\S+)$/m.exec(read('spec/openapi.yaml'))?.[1]
  t.ok(version, 'the spec has info.version')
  const typed = server.filter((f) => read(f).includes(`'${version}'`) || read(f).includes(`"${version}"`))
  t.same(typed, [], 'no server module types the version')
  t.equal(JSON.parse(read('package.json')).version, undefined, 'package.json carries none (the package is private)')
})
