// Folders the server is told to use but cannot make: under /proc (a file system that answers
// ENOENT for a folder whose parent is there, where Node 20's mkdirSync `recursive` loops forever in
// native code), or with a file in the way. Each is a clear refusal, never a hang: before, a server
// with BACKUP_DIR=/proc/… spun both cores with no log line and ignored SIGTERM, and one with
// DATA_DIR=/proc/… never started and never said why.
import { execFile } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { makeDirs } from '../../plugins/store/private-files.js'
import { refusedStart, testApp } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'
import { requirePart, startServer } from '../helpers/processes.js'

/** A folder /proc cannot hold (a new name each time). */
const underProc = () => `/proc/studio-test-${process.pid}-${Math.random().toString(36).slice(2)}`
const hasProc = existsSync('/proc/self')

t.test('makeDirs: parents made with the mode, an existing folder is fine, a file in the way is an error', async (t) => {
  const root = testdir(t, { file: 'not a folder' })
  const deep = join(root, 'a', 'b', 'c')
  makeDirs(deep, 0o700)
  for (const dir of [join(root, 'a'), join(root, 'a', 'b'), deep]) t.equal(statSync(dir).mode & 0o077, 0, `${dir}: owner-only`)
  t.doesNotThrow(() => makeDirs(deep, 0o700), 'made again: nothing to do')
  t.throws(() => makeDirs(join(root, 'file'), 0o700), { code: 'EEXIST' }, 'a file where the folder should be')
  t.throws(() => makeDirs(join(root, 'file', 'inside'), 0o700), { code: 'ENOTDIR' }, 'a file where a parent should be')
})

t.test('makeDirs under /proc: ENOENT at once (in a child process, so that a loop fails the test instead of hanging it)', async (t) => {
  if (!requirePart(t, hasProc, '/proc', 'run the tests on Linux')) return
  const script = `import { makeDirs } from './plugins/store/private-files.ts'
try { makeDirs(${JSON.stringify(join(underProc(), 'backups'))}, 0o700); console.log('made') } catch (err) { console.log(err.code) }`
  const out = await new Promise<{ code: number | string | null; stdout: string }>((done) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: projectRoot, timeout: 30_000, killSignal: 'SIGKILL' },
      (err, stdout) => done({ code: err ? (err.code ?? err.signal ?? null) : 0, stdout: String(stdout) }),
    ),
  )
  t.same(out, { code: 0, stdout: 'ENOENT\n' }, 'ENOENT, and the process ends')
})

t.test('a server whose DATA_DIR cannot be made exits with EX_CONFIG (78), naming it', async (t) => {
  const cases: [string, string][] = [['a file in the way', join(testdir(t, { file: 'x' }), 'file', 'var')]]
  if (hasProc) cases.push(['under /proc', underProc()])
  for (const [label, dataDir] of cases) {
    // refusedStart gives the process 60 s: a start that hangs fails here as a timeout (no exit code).
    const { code, stderr } = await refusedStart({ dataDir } as Parameters<typeof refusedStart>[0])
    t.equal(code, 78, `${label}: exit 78`)
    t.match(stderr, `DATA_DIR ${dataDir} cannot be made or used as the data folder`, `${label}: says which folder`)
  }
})

t.test('a server whose BACKUP_DIR cannot be made: serves, says so at warn, and stops cleanly on SIGTERM', async (t) => {
  if (!requirePart(t, hasProc, '/proc', 'run the tests on Linux')) return
  const backupDir = underProc()
  const server = await startServer(t, { DATA_DIR: join(testdir(t), 'var'), BACKUP_DIR: backupDir })
  const deadline = Date.now() + 60_000
  while (!server.output().includes('scheduled backup failed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  const warned = server
    .output()
    .split('\n')
    .filter((line) => line.includes('scheduled backup failed'))
    .map((line) => JSON.parse(line) as { level: number; backup_dir: string; err: { message: string } })
  t.equal(warned.length, 1, 'one warn line')
  t.match(warned[0], { level: 40, backup_dir: backupDir, err: { message: /ENOENT/ } }, 'naming the folder and the error')
  t.equal((await fetch(`${server.url}/readyz`)).status, 200, 'the server still serves')
  // A server stuck in a native loop never exits on SIGTERM: give it 30 s (its own shutdown deadline is 10 s).
  const stopped = await Promise.race([
    server.stop(),
    new Promise<string>((r) => setTimeout(() => r('still running 30 s after SIGTERM'), 30_000)),
  ])
  t.equal(stopped, 0, 'SIGTERM: a clean exit')
})

t.test('npm run backup -- --to a folder that cannot be made: an error naming it, at once', async (t) => {
  if (!requirePart(t, hasProc, '/proc', 'run the tests on Linux')) return
  const { config } = await testApp(t)
  const into = underProc()
  const { code, stderr } = await run('backup', ['backup', '--to', into], config)
  t.not(code, 0, 'a failure exit code (run() gives the CLI 60 s: a hang fails as -1)')
  t.not(code, -1, 'not a timeout')
  t.match(stderr, into, 'the message names the folder')
})
