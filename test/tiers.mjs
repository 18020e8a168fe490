#!/usr/bin/env node
// The test suite in three tiers, each run by tap with settings of its own, its wall time printed.
//
// Where a test file goes (the rule; a file that mixes kinds is split, a file is never dropped):
//
//   test/pure/    no app, no store, no process, no socket: functions, the spec, the docs, the
//                 layout. Runs once.
//   test/app/     the app in this process (buildApp / testApp / live, inject or a listener of its
//                 own, in-process receivers and SMTP servers) on the configured store: SQLite, or
//                 PostgreSQL + Redis when DATABASE_URL / REDIS_URL are set. The only tier CI runs
//                 on both stores, so a test belongs here when its answer could differ by store.
//   test/system/  whatever starts a process or stands for the machine: servers and CLIs as child
//                 processes (the built bundles, test/helpers/bundles.ts), throwaway PostgreSQL and
//                 Redis servers, floods, kill -9, raw sockets and timeouts, browsers
//                 (test/system/browser), npm pack, the build, external linters. Runs once, on the
//                 embedded default; the files that test a scale-out against the configured
//                 PostgreSQL/Redis, and the browser's staff sign-in (SCALE_OUT below), run again
//                 with them.
//
// Usage:
//   node test/tiers.mjs [pure] [app] [system] [--scale-out] [--build] [test/<tier>/<file>.test.ts ...]
//     no tier named: all three (what `npm test` runs after its pretest);
//     --build: build what the tiers need (the UI, the spec as JSON, the bundles) and stop;
//     --scale-out: the SCALE_OUT files too (CI's PostgreSQL + Redis run: `app --scale-out`);
//     files: only those, each with its tier's settings (`npm test -- test/app/leads.test.ts`).
//   npm run test:quick    pure + app: the edit loop (no pretest; the UI build only if missing).
//
// Prints tap's output, a line per tier (`== tier app: 1234 passed, 0 failed, 95 s`), and last the
// sum in tap's own summary form (`# { total: N, pass: N, fail: N }`), which .ci/run adds up.
// Exits non-zero when a tier failed.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = dirname(dirname(fileURLToPath(import.meta.url)))

/**
 * Per tier: parallel test files and the per-file timeout (a hang detector, not a speed check). On
 * a 2-core machine: pure files are short and mostly loading, so four at a time keep both cores
 * busy; app files are mostly CPU-bound, with some waits (retries, timers), three at a time; system
 * files wait on the processes they start, which need the cores themselves, so two at a time. The timeouts leave a machine that
 * other work loads room (the slowest system files, backup and cli, start dozens of processes).
 * `group`: files run that many to a process (groupEntry), one after the other. A process of the
 * app tier spends about 1.4 s of CPU loading the app's code and building its first app before a
 * test of its own runs; four files in one process spend it once (measured: leads, projects,
 * intake and privacy took 19.6 s of CPU as four processes, 11.9 s as one). The per-file timeout
 * counts once per file of the group. System files stay one per process: they wait on what they
 * start, and side by side those waits overlap.
 */
const TIERS = {
  pure: { jobs: 4, timeout: 120, group: 4 },
  app: { jobs: 3, timeout: 300, group: 4 },
  system: { jobs: 2, timeout: 600, group: 1 },
}

/**
 * System files that run again on the configured PostgreSQL and Redis (DATABASE_URL, REDIS_URL):
 * those that test a scale-out, and the staff sign-in in a real browser (issue 34 asks for its
 * whole flow on both stores).
 */
export const SCALE_OUT = [
  'test/system/proxy.test.ts',
  'test/system/erase-long-reader.test.ts',
  'test/system/purge-before.test.ts',
  'test/system/browser/staff.test.ts',
]

const args = process.argv.slice(2)
const tierOf = (file) => relative(root, join(process.cwd(), file)).split('/')[1] ?? ''
const files = args.filter((a) => a.endsWith('.test.ts'))
const FLAGS = ['--scale-out', '--build', '--together']
const unknown = args.filter((a) => !(a in TIERS) && !FLAGS.includes(a) && !/^--(postgres|redis)=./.test(a) && !files.includes(a))
const strays = files.filter((f) => !existsSync(f) || !(tierOf(f) in TIERS))
if (unknown.length > 0 || strays.length > 0) {
  console.error(
    `tiers: unknown ${[...unknown, ...strays].join(', ')}; usage: node test/tiers.mjs [pure] [app] [system] [--scale-out] [test/<tier>/<file>.test.ts ...]`,
  )
  process.exit(64)
}
const named = args.filter((a) => a in TIERS)
const selected = files.length > 0 ? [] : named.length > 0 ? named : Object.keys(TIERS)
const scaleOut = args.includes('--scale-out') && !selected.includes('system')

/** The test files under `dir` (recursively), relative to the project root. */
function testFiles(dir) {
  const out = []
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith('.test.ts')) out.push(relative(root, path))
    }
  }
  walk(join(root, dir))
  return out
}

/** The newest modification time of the tracked sources a bundle is made from. */
function newestSource() {
  const listed = spawnSync('git', ['ls-files', '-z', '--', '*.ts', '*.mjs', '*.json'], { cwd: root, encoding: 'utf8' })
  if (listed.status !== 0) return Number.POSITIVE_INFINITY
  let newest = 0
  for (const file of listed.stdout.split('\0')) {
    if (!file || file.startsWith('test/') || file.startsWith('ui/') || file.startsWith('client/')) continue
    try {
      newest = Math.max(newest, statSync(join(root, file)).mtimeMs)
    } catch {
      // deleted in the working tree
    }
  }
  return newest
}

/** The newest modification time under test/ (new and untracked test files too). */
function newestTest() {
  let newest = 0
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name)
      const stat = statSync(path)
      if (stat.isDirectory()) walk(path)
      else newest = Math.max(newest, stat.mtimeMs)
    }
  }
  walk(join(root, 'test'))
  return newest
}

/**
 * The test files' bundles (scripts/bundle.mjs bundleTests): every test file at once, rebuilt when a
 * source or a test changed or the list of test files did (a few seconds).
 */
async function bundleTestFiles() {
  const { bundleTests, TESTS_DIR } = await import('../scripts/bundle.mjs')
  const all = Object.keys(TIERS).flatMap((tier) => testFiles(join('test', tier)))
  const manifest = join(TESTS_DIR, 'files.json')
  const listed = existsSync(manifest) ? readFileSync(manifest, 'utf8') : ''
  const built = listed ? statSync(manifest).mtimeMs : 0
  if (listed === JSON.stringify(all) && built >= Math.max(newestSource(), newestTest())) return
  const started = Date.now()
  await bundleTests(all)
  writeFileSync(manifest, JSON.stringify(all))
  console.log(`== build:tests (${all.length} test files bundled, dist/tests): ${Math.round((Date.now() - started) / 1000)} s`)
}

/** What the chosen tiers need built: the UI (pages, apps) and docs assets; the bundles for processes. */
function prepare(needsBundles) {
  const step = (what, command, commandArgs) => {
    const started = Date.now()
    const res = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit' })
    if (res.status !== 0) {
      console.error(`tiers: ${what} failed`)
      process.exit(1)
    }
    console.log(`== ${what}: ${Math.round((Date.now() - started) / 1000)} s`)
  }
  // tap builds its Test class for the plugins .taprc names when its first run in a fresh install
  // finds the default one, but that first run still starts its test processes with the default
  // plugins' loaders: @tapjs/typescript's ts-node, which .taprc drops, type-checking every test
  // file as it loads (minutes per file on 2 cores). So the build comes first.
  const built = join(root, 'node_modules', '@tapjs', 'test', 'test-built', 'dist', 'esm', 'index.js')
  if (existsSync(built) && readFileSync(built, 'utf8').includes('@tapjs/typescript'))
    step("tap build (tap's Test class without the plugins .taprc drops)", join(root, 'node_modules', '.bin', 'tap'), ['build'])
  // `npm test`'s pretest builds both; a quick run builds what is missing only.
  if (!existsSync(join(root, 'dist', 'ui'))) step('build:ui', 'npm', ['run', '-s', 'build:ui'])
  if (!existsSync(join(root, 'dist', 'docs-static'))) step('build:docs', 'npm', ['run', '-s', 'build:docs'])
  // The spec as JSON, which every app the tests build reads instead of parsing the YAML (plugins/spec/load.ts).
  const specJson = join(root, 'dist', 'spec', 'openapi.json')
  if (!existsSync(specJson) || statSync(specJson).mtimeMs < statSync(join(root, 'spec', 'openapi.yaml')).mtimeMs)
    step('build:spec', process.execPath, ['scripts/build-spec.mjs'])
  if (needsBundles) {
    const bundle = join(root, 'dist', 'studio.bundle.js')
    const bundled = existsSync(bundle) && existsSync(join(root, 'dist', 'server.bundle.js')) ? statSync(bundle).mtimeMs : 0
    // Spawned servers and CLIs run the bundles: rebuilt when a source changed since (a second or so).
    if (bundled < newestSource()) step('build:server (the bundles the system tests run)', process.execPath, ['scripts/bundle.mjs'])
  }
}

/**
 * Runs test files, `width` at a time, each bundle in a plain `node` process that prints TAP (the
 * files use tap's API; tap counts their assertions and prints `# { total, pass, fail }`). Each
 * item is a file of a run (a tier on a store), or a group of its files in one process (itemsOf),
 * whose counts, first start and last end it adds to.
 * Not tap's runner: it starts every test with @tapjs/processinfo's and @tapjs/mock's module hooks
 * and puts processinfo's hook into NODE_OPTIONS of every process a test starts, so each server
 * and CLI of the system tier loaded it too. Measured on this machine: the CLI bundle answering
 * `clients list` 2.2 s of CPU with the hook against 0.7 s without; test/app/errors.test.ts 29 s
 * of CPU under tap's runner against 8 s as a plain process. A file's output is printed whole when
 * it ends, under `# Subtest: <file>` (`<file> + <file>…` for a group), then `ok|not ok N - <file>
 * # time=…ms`, as tap's runner did. The timeout (seconds, the tier's per file) is the process's
 * tap timeout (TAP_TIMEOUT: tap reports what was still running); a process still alive 30 s
 * later is killed.
 */
function runItems(items, width) {
  // Largest first (a fair guess at the longest): none of them is left to run alone at the end.
  // Tried in fresh-clone CI runs: system files first (they wait on what they start), six at a
  // time: 508–516 s for the pool, but test/system/shared-limits.test.ts's exact shared budgets
  // failed under that load; system files and app groups taking turns, four at a time: 531 s.
  const queue = items.sort((a, b) => b.size - a.size)
  const runOne = ({ files, index, run }) =>
    new Promise((done) => {
      const started = Date.now()
      run.started = Math.min(run.started ?? started, started)
      const label = files.join(' + ')
      // The store as an argument: tap names a file's fixture folders (.tap/fixtures) after its
      // command line, so the same file run on both stores at once never shares a folder.
      const main = files.length === 1 ? testBundle(files[0]) : groupEntry(files, `${run.tier.split(' ')[0]}-${run.storeArg}-${index}`)
      const child = spawn(process.execPath, ['--enable-source-maps', relative(root, main), `--store=${run.storeArg}`], {
        cwd: root,
        env: { ...process.env, ...run.env, TAP_TIMEOUT: String(run.settings.timeout * files.length) },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let out = ''
      child.stdout.on('data', (chunk) => {
        out += chunk
      })
      child.stderr.on('data', (chunk) => {
        out += chunk
      })
      const killer = setTimeout(() => child.kill('SIGKILL'), (run.settings.timeout * files.length + 30) * 1000)
      child.on('close', (code, signal) => {
        clearTimeout(killer)
        const ms = Date.now() - started
        run.ended = Date.now()
        const counts = [...out.matchAll(/^# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?/gm)].pop()
        const filePass = Number(counts?.[2] ?? 0)
        let fileFail = Number(counts?.[3] ?? 0)
        if ((code !== 0 || signal || !counts) && fileFail === 0) fileFail = 1
        run.pass += filePass
        run.fail += fileFail
        const body = out
          .replace(/\n$/, '')
          .split('\n')
          .map((line) => (line ? `    ${line}` : line))
        const ended = signal ? ` (killed: ${signal})` : code !== 0 ? ` (exit ${code})` : ''
        const where = run.together ? ` (${run.tier} on ${run.store})` : ''
        process.stdout.write(
          `# Subtest: ${label}${where}\n${body.join('\n')}\n${fileFail > 0 ? 'not ok' : 'ok'} ${index} - ${label}${where}${ended} # time=${ms}ms\n\n`,
        )
        done()
      })
    })
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) await runOne(next)
  }
  return Promise.all(Array.from({ length: Math.min(width, items.length) }, worker))
}

/**
 * A group's entry, dist/tests/groups/<name>.mjs: the files' bundles imported in one module, so
 * that every file's tests are registered on tap's one root before any of them runs (imported one
 * by one, a file's tests could end before the next was read, and tap ends an idle root). One TAP
 * stream, one count of the group's assertions; a failure's `at:` names its TypeScript file. What a
 * file set for the whole process would reach the files after it: test/pure/layout.test.ts
 * refuses that in the grouped tiers.
 */
function groupEntry(files, name) {
  const dir = join(dirname(testBundle(files[0])), 'groups')
  mkdirSync(dir, { recursive: true })
  const entry = join(dir, `${name}.mjs`)
  writeFileSync(entry, files.map((f) => `import ${JSON.stringify(pathToFileURL(testBundle(f)).href)}\n`).join(''))
  return entry
}

/**
 * A run's files as the items runItems starts: one file each, or groups of the tier's `group`
 * files, balanced by size (each file to the group with the fewest bytes so far, largest first).
 */
function itemsOf(r) {
  const sized = r.files.map((file) => ({ file, size: statSync(join(root, file)).size })).sort((a, b) => b.size - a.size)
  const count = Math.ceil(sized.length / (r.settings.group ?? 1))
  const groups = Array.from({ length: count }, () => ({ files: [], size: 0 }))
  for (const { file, size } of sized) {
    const smallest = groups.reduce((a, b) => (b.size < a.size ? b : a))
    smallest.files.push(file)
    smallest.size += size
  }
  return groups.map((g, i) => ({ ...g, index: i + 1, run: r }))
}

/** A store's label and the argument that keeps its fixture folders apart. */
const storeOf = (env) => ({
  store: env.DATABASE_URL ? `PostgreSQL${env.REDIS_URL ? ' + Redis' : ''}` : 'SQLite',
  storeArg: env.DATABASE_URL ? 'postgres' : 'sqlite',
})
const run = (tier, files, env = {}, settings = TIERS[tier]) => ({
  tier,
  files,
  env,
  settings,
  ...storeOf({ ...process.env, ...env }),
  pass: 0,
  fail: 0,
})
const runs = selected.map((tier) => run(tier, testFiles(join('test', tier))))
for (const tier of Object.keys(TIERS)) {
  const chosen = files.filter((f) => tierOf(f) === tier).map((f) => relative(root, join(process.cwd(), f)))
  if (chosen.length > 0) runs.push(run(tier, chosen))
}
if (scaleOut) runs.push(run('system (scale-out)', SCALE_OUT, {}, TIERS.system))
// --postgres=URL [--redis=URL]: CI's second store, in the same run: the app tier and the
// scale-out files again on it.
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
if (option('postgres')) {
  const env = { DATABASE_URL: option('postgres'), ...(option('redis') && { REDIS_URL: option('redis') }) }
  runs.push(run('app', testFiles(join('test', 'app')), env), run('system (scale-out)', SCALE_OUT, env, TIERS.system))
}
prepare(args.includes('--build') || runs.some(({ tier }) => tier.startsWith('system')))
await bundleTestFiles()
// `--build`: only what the tiers need built (pretest's last step, so that runs started together
// afterwards, CI's two stores, find everything built and build nothing themselves).
if (args.includes('--build')) process.exit(0)
const { testBundle } = await import('../scripts/bundle.mjs')

// --together: every run's files in one pool of TOGETHER_JOBS at a time, largest first (CI: both
// stores at once). The tests of a file wait on servers, clients and timeouts; tiers one after the
// other left the cores half idle, all of them together keep them busy. Five at a time: app groups
// keep a core busy while the system files beside them wait.
const TOGETHER_JOBS = 5
const together = args.includes('--together')
if (together) {
  for (const r of runs) r.together = true
  console.log(`\n== together: ${runs.map((r) => `${r.tier} on ${r.store} (${r.files.length} files)`).join(', ')}`)
  await runItems(runs.flatMap(itemsOf), Number(process.env.TAP_JOBS) || TOGETHER_JOBS)
} else {
  for (const r of runs) {
    console.log(`\n== tier ${r.tier} on ${r.store}: ${r.files.length} files`)
    await runItems(itemsOf(r), Number(process.env.TAP_JOBS) || r.settings.jobs)
    console.log(tierLine(r))
  }
}

function tierLine(r) {
  const seconds = Math.round(((r.ended ?? Date.now()) - (r.started ?? Date.now())) / 1000)
  return `== tier ${r.tier} on ${r.store}: ${r.pass} passed, ${r.fail} failed, ${seconds} s${together ? ' (first start to last end, beside the others)' : ''}`
}
const pass = runs.reduce((n, r) => n + r.pass, 0)
const fail = runs.reduce((n, r) => n + r.fail, 0)
console.log(`\n${runs.map(tierLine).join('\n')}`)
console.log(`# { total: ${pass + fail}, pass: ${pass}, fail: ${fail} }`)
// Not process.exit(): stdout into a pipe is written asynchronously, and exiting at once can drop
// what is still queued, these last lines included (CI once read no summary at all). Every test
// process has ended, so nothing keeps this one alive.
process.exitCode = fail > 0 ? 1 : 0
