// The house rules that keep the layout readable, checked on the code itself: imports run one way
// (lib/ is shared helpers that know nothing of the app; plugins/ is Fastify plumbing that never
// imports a feature, a handler or a script; a folder's index.ts is its plugin, imported only by
// app.ts), the spec is read from disk only by the entry points, settings are read only by
// config.ts, server files stay short, and each migration is a file of its own.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import t from 'tap'
import ts from 'typescript'
import { projectRoot } from '../../config.js'

function sources(dir: string): string[] {
  return readdirSync(join(projectRoot, dir)).flatMap((name) => {
    const path = join(dir, name)
    return statSync(join(projectRoot, path)).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : []
  })
}

const read = (path: string) => readFileSync(join(projectRoot, path), 'utf8')
const server = [
  'app.ts',
  'server.ts',
  'config.ts',
  ...sources('plugins'),
  ...sources('features'),
  ...sources('handlers'),
  ...sources('lib'),
  ...sources('scripts'),
]

interface Import {
  from: string
  /** The imported file, relative to the project root (`.js` as written). */
  to: string
  typeOnly: boolean
}

/** The relative imports and re-exports of a file, read by TypeScript's parser. */
function imports(file: string): Import[] {
  const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, false)
  const out: Import[] = []
  for (const node of source.statements) {
    if (!(ts.isImportDeclaration(node) || ts.isExportDeclaration(node))) continue
    const spec = node.moduleSpecifier
    if (!spec || !ts.isStringLiteral(spec) || !spec.text.startsWith('.')) continue
    const typeOnly = ts.isImportDeclaration(node)
      ? node.importClause?.isTypeOnly === true ||
        (node.importClause?.name === undefined &&
          node.importClause?.namedBindings !== undefined &&
          ts.isNamedImports(node.importClause.namedBindings) &&
          node.importClause.namedBindings.elements.every((e) => e.isTypeOnly))
      : node.isTypeOnly
    out.push({ from: file, to: normalize(join(dirname(file), spec.text)), typeOnly })
  }
  return out
}

const top = (path: string) => path.split('/')[0] ?? ''
/** The folder a file belongs to: `plugins/errors`, `features/leads`, `lib`, `app.ts`… */
const area = (path: string) =>
  path
    .split('/')
    .slice(0, path.startsWith('lib/') ? 1 : 2)
    .join('/')
const allImports = server.flatMap(imports)

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

t.test('lib/ imports only lib/ and generated/', async (t) => {
  const offenders = allImports.filter((i) => top(i.from) === 'lib' && !['lib', 'generated'].includes(top(i.to)))
  t.same(offenders, [], 'a shared helper knows nothing of the app')
})

t.test('plugins/ never import a feature, a handler or a script', async (t) => {
  const offenders = allImports.filter((i) => top(i.from) === 'plugins' && ['features', 'handlers', 'scripts'].includes(top(i.to)))
  t.same(offenders, [], 'plumbing is handed what it needs (by app.ts, decorators or hooks), it does not reach up')
})

t.test("a folder's index.ts (its plugin) is imported by app.ts only, but for types", async (t) => {
  const offenders = allImports.filter(
    (i) => !i.typeOnly && i.from !== 'app.ts' && i.to.endsWith('/index.js') && area(i.to) !== area(i.from) && top(i.to) !== 'generated',
  )
  t.same(offenders, [], 'import the module that holds the service (its own file), not the folder plugin')
})

t.test('server files hold at most 400 lines', async (t) => {
  const long = server
    .filter((f) => !f.startsWith('scripts/'))
    .map((f) => ({ file: f, lines: read(f).split('\n').length - 1 }))
    .filter((f) => f.lines > 400)
  t.same(long, [], 'split a longer file by what its parts do')
})

t.test('the environment is read by config.ts only (no settings, no test switches elsewhere)', async (t) => {
  // Allowed: handing the whole environment to a child process, and PATH (to find a program).
  const readers = server
    .filter((f) => f !== 'config.ts')
    .flatMap((f) => [...read(f).matchAll(/process\.env(?!\.PATH\b)(?:\.\w+|\[)/g)].map((m) => `${f}: ${m[0]}`))
  t.same(readers, [], "a setting belongs in config.ts's table; a test switch belongs in no production file")
})

t.test('the files of the grouped tiers set nothing for the files after them in their process', async (t) => {
  // test/tiers.mjs runs app and pure files several to a process (one module importing them): a
  // root-level timeout, plan or hook, or an environment variable set, would reach the next file's
  // tests; a top-level await would let the files before it run (and tap end) before it is read.
  const whole = /^t\.(setTimeout|plan|before|beforeEach|after|afterEach|jobs)\b/
  /** Whether `node` awaits outside any function (a top-level await). */
  const awaits = (node: ts.Node): boolean =>
    ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier !== undefined)
      ? true
      : !ts.isFunctionLike(node) && (ts.forEachChild(node, awaits) ?? false)
  const found = ['test/app', 'test/pure'].flatMap((dir) =>
    sources(dir)
      .filter((f) => f.endsWith('.test.ts'))
      .flatMap((file) => {
        const source = ts.createSourceFile(file, read(file), ts.ScriptTarget.Latest, false)
        const roots = source.statements
          .filter((s) => whole.test(s.getText(source)) || awaits(s))
          .map((s) => `${file}: ${s.getText(source).slice(0, 40)}`)
        const env = [...read(file).matchAll(/process\.env(?:\.\w+|\[[^\]]+\])\s*=(?!=)|delete process\.env/g)].map(
          (m) => `${file}: ${m[0]}`,
        )
        return [...roots, ...env]
      }),
  )
  t.same(found, [], 'give the setting to the subtest that needs it (t.test options), await inside a test, or move the file to test/system/')
})

t.test('one migration per file, each registered in order', async (t) => {
  const dir = 'plugins/store/migrations'
  const files = readdirSync(join(projectRoot, dir))
    .filter((f) => f !== 'index.ts')
    .sort()
  t.ok(files.length > 0)
  files.forEach((f, i) => {
    t.match(f, new RegExp(`^${String(i + 1).padStart(3, '0')}_[a-z0-9_]+\\.ts$`), `${f}: numbered in sequence, NNN_what.ts`)
    t.equal((read(join(dir, f)).match(/\basync up\(/g) ?? []).length, 1, `${f}: one migration (one up)`)
  })
  const registered = [...read(join(dir, 'index.ts')).matchAll(/^\s+'(\d{3}_[a-z0-9_]+)': m\d{3},$/gm)].map((m) => `${m[1]}.ts`)
  t.same(registered, files, 'index.ts registers every file, in order')
})
