// The data folder holds leads' personal data, secret hashes, keys and credentials: the folder is
// 0700 and every file in it 0600 whatever the umask and whatever modes an older version left, and
// a folder that cannot be made private is reported at start-up. SQLite (its -wal and -shm too)
// whatever the suite's backend: that is where the files are.
import { execFile } from 'node:child_process'
import { generateKeyPairSync } from 'node:crypto'
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { createConfig, projectRoot } from '../../config.js'
import { leadOf, testApp, tokenFor } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'
import { captureLog } from '../helpers/log.js'
import { requirePart, startServer } from '../helpers/processes.js'

const mode = (path: string): string => (statSync(path).mode & 0o7777).toString(8).padStart(4, '0')

/** Every file and folder under `dir`, with the folder itself. */
function everything(dir: string): string[] {
  return [dir, ...readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((p) => join(dir, p))]
}

function checkPrivate(t: Test, dataDir: string): void {
  const paths = everything(dataDir)
  for (const name of [
    'studio.db',
    'studio.db-wal',
    'studio.db-shm',
    'keys/signing-key.pem',
    'keys/secret-pepper',
    'bootstrap-client.json',
  ]) {
    t.ok(paths.includes(join(dataDir, name)), `${name} exists`)
  }
  for (const path of paths) {
    const isDir = statSync(path).isDirectory()
    t.equal(mode(path), isDir ? '0700' : '0600', `${path.slice(dataDir.length) || 'the data folder'}: ${isDir ? '0700' : '0600'}`)
  }
}

/** Runs `fn` under `mask`, the process's umask restored after. */
async function withUmask<T>(mask: number, fn: () => Promise<T>): Promise<T> {
  const before = process.umask(mask)
  try {
    return await fn()
  } finally {
    process.umask(before)
  }
}

async function startAndWrite(t: Test, dataDir: string): Promise<void> {
  const { app } = await testApp(t, { dataDir, databaseUrl: undefined })
  const { token } = await tokenFor(app, ['write:leads'])
  const res = await app.inject({
    method: 'POST',
    url: '/scripts/enquiry_backend.php',
    headers: { authorization: `Bearer ${token}` },
    payload: leadOf(1),
  })
  t.equal(res.statusCode, 200, 'a lead is stored (the WAL is written)')
}

for (const mask of [0o022, 0o000]) {
  t.test(`a new data folder under umask ${mask.toString(8).padStart(3, '0')}: 0700, files 0600`, async (t) => {
    const dataDir = join(testdir(t, {}), 'var')
    await withUmask(mask, () => startAndWrite(t, dataDir))
    checkPrivate(t, dataDir)
  })
}

t.test('keys made by instances starting together: every one reads the whole key, the same key', async (t) => {
  // Four processes make the key of each of 12 fresh folders at the same moments. A key file
  // created by name and then written would be read empty by the others in between (an empty
  // pepper, an unreadable signing key): half the rounds or more did here, before keys were linked into place.
  const root = testdir(t, {})
  const dirs = Array.from({ length: 12 }, (_, i) => join(root, `data-${i}`))
  const start = Date.now() + 6000 // after the four have loaded (tsx), however busy the machine
  const outputs = await Promise.all(
    Array.from(
      { length: 4 },
      () =>
        new Promise<string[]>((resolve, reject) => {
          execFile(
            process.execPath,
            ['--import', 'tsx', join('test', 'helpers', 'keep-together.ts'), String(start), ...dirs],
            { cwd: projectRoot, timeout: 60_000 },
            (err, stdout) => (err ? reject(err) : resolve(JSON.parse(String(stdout)) as string[])),
          )
        }),
    ),
  )
  for (const [i, dir] of dirs.entries()) {
    const seen = new Set(outputs.map((read) => read[i]))
    const onDisk = readFileSync(join(dir, 'keys', 'k'), 'utf8')
    t.same([...seen], [onDisk], `${dir}: all four read the key on disk`)
    t.equal(onDisk.length, 43, 'a whole key')
    t.same(readdirSync(join(dir, 'keys')), ['k'], 'no draft left beside it')
    t.equal(mode(join(dir, 'keys', 'k')), '0600')
  }
})

t.test('an existing folder and files an older version left readable are made private', async (t) => {
  const dataDir = testdir(t, { keys: {} })
  // A first start with the modes an older version (umask 022) left, then the files loosened.
  await withUmask(0o022, () => startAndWrite(t, dataDir))
  for (const path of everything(dataDir)) chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644)
  writeFileSync(join(dataDir, 'bootstrap-client.json'), '{}', { mode: 0o644 })
  chmodSync(join(dataDir, 'bootstrap-client.json'), 0o644)
  await withUmask(0o022, () => startAndWrite(t, dataDir))
  checkPrivate(t, dataDir)
})

t.test('a data folder that cannot be made private (a shared, sticky one): a warning at start-up, private files', async (t) => {
  const log = captureLog()
  const dataDir = join(testdir(t, {}), 'shared')
  mkdirSync(dataDir)
  chmodSync(dataDir, 0o1777) // like /tmp: the server must not change its mode
  const config = createConfig({ dataDir, databaseUrl: undefined, logLevel: 'warn' })
  const app = await withUmask(0o022, () => buildApp(config, { logger: { level: 'warn', stream: log.stream } }))
  t.teardown(() => app.close())
  await app.ready()
  t.equal(mode(dataDir), '1777', 'a shared folder is left as it is')
  const warnings = log.lines().filter((l) => l.level === 40 && /data folder is open to other users/.test(l.msg))
  t.equal(warnings.length, 1, 'one warning says the data folder is open to others')
  t.equal(warnings[0]?.data_dir, dataDir)
  for (const name of ['studio.db', 'studio.db-wal', 'keys/secret-pepper', 'bootstrap-client.json']) {
    t.ok(existsSync(join(dataDir, name)), `${name} exists`)
    t.equal(mode(join(dataDir, name)), '0600', `${name}: still 0600`)
  }
})

t.test('a private folder gives no warning', async (t) => {
  const log = captureLog()
  // A configured enquiry contact: the default one is warned about (test/app/first-run.test.ts).
  const config = createConfig({
    dataDir: join(testdir(t, {}), 'var'),
    databaseUrl: undefined,
    logLevel: 'warn',
    enquiryContact: 'Write to hello@studio.example',
  })
  const app = await buildApp(config, { logger: { level: 'warn', stream: log.stream } })
  t.teardown(() => app.close())
  await app.ready()
  t.same(log.lines(), [], 'nothing at warn level')
})

// Finding 17.9: a data folder, or a key or database in it, that belongs to another user is refused
// at start, naming the path, its owner and the fix (as sshd's StrictModes refuses another user's
// keys). Needs root to give files away (chown to nobody, uid 65534).
const NOBODY = 65534
const asRoot = process.getuid?.() === 0

t.test("another user's data folder, key or database: the server refuses to start", async (t) => {
  if (!requirePart(t, asRoot, 'root (to chown test files to another user)', 'run the tests as root')) return
  const planted = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const cases: [string, (dataDir: string) => string][] = [
    ['the folder', (dataDir) => dataDir],
    ['a planted signing key', (dataDir) => join(dataDir, 'keys', 'signing-key.pem')],
    ['the keys folder', (dataDir) => join(dataDir, 'keys')],
    ['the database', (dataDir) => join(dataDir, 'studio.db')],
  ]
  for (const [what, owned] of cases) {
    const dataDir = join(testdir(t, {}), 'var')
    // A folder set up as a first start would, then the key replaced by one another user planted.
    await startAndWrite(t, dataDir)
    writeFileSync(join(dataDir, 'keys', 'signing-key.pem'), planted, { mode: 0o600 })
    chownSync(owned(dataDir), NOBODY, NOBODY)
    const config = createConfig({ dataDir, databaseUrl: undefined })
    await t.rejects(
      buildApp(config).then((app) => app.ready()),
      {
        message: new RegExp(
          `^${owned(dataDir).replaceAll('.', '\\.')} belongs to nobody \\(uid ${NOBODY}\\), not to root \\(uid 0\\) that runs the server: .*chown -R root ${dataDir.replaceAll('.', '\\.')}`,
        ),
      },
      `${what} owned by nobody: refused, with the path, its owner and the fix`,
    )
  }
})

t.test("another user's data folder: the server process stops with the reason; the CLI refuses too", async (t) => {
  if (!requirePart(t, asRoot, 'root (to chown test files to another user)', 'run the tests as root')) return
  const dataDir = join(testdir(t, {}), 'var')
  await startAndWrite(t, dataDir)
  chownSync(join(dataDir, 'keys', 'secret-pepper'), NOBODY, NOBODY)
  await t.rejects(startServer(t, { DATA_DIR: dataDir }), /studio-api failed to start: .*secret-pepper belongs to nobody/)
  const cli = await run('clients', ['list'], createConfig({ dataDir, databaseUrl: undefined }))
  t.equal(cli.code, 1)
  t.match(cli.stderr, /secret-pepper belongs to nobody \(uid 65534\), not to root \(uid 0\) that runs this command/)
})
