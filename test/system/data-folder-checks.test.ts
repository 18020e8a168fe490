// The data folder and the listeners, as the third audit found them (findings 10 and 12):
//  - a data folder that is a symbolic link (one's own) to another user's empty folder was used,
//    the database created there: the ownership check now applies to the folder it resolves to;
//  - a foreign-owned data folder exited 1, so a service unit restarted it forever: it is a
//    configuration mistake, exit 78 (EX_CONFIG), for the server and the command line;
//  - METRICS_HOST=0.0.0.0 was accepted without a word: the server warns at start;
//  - a backup that failed on a full disk left its `.partial` folder holding the space until the
//    next one: a failed snapshot removes it (a real full disk: a 1 MiB tmpfs, as root).
// Needs root to give a folder to another user (nobody) and to mount the tmpfs; skipped loudly otherwise.
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t from 'tap'
import { buildApp } from '../../app.js'
import { createConfig } from '../../config.js'
import { writeSnapshot } from '../../features/backup/snapshot.js'
import { isLoopbackHost } from '../../lib/address.js'
import { ForeignOwner } from '../../plugins/store/private-files.js'
import { refusedStart } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'
import { freePort, requirePart, startServer } from '../helpers/processes.js'

const NOBODY = 65534
const asRoot = process.getuid?.() === 0

t.test('a data folder that is a link to another user’s empty folder: refused at the folder it leads to, exit 78', async (t) => {
  if (!requirePart(t, asRoot, 'root (to chown a folder to another user)', 'run the tests as root')) return
  const root = testdir(t, {})
  const theirs = join(root, 'theirs')
  mkdirSync(theirs, { mode: 0o700 })
  chownSync(theirs, NOBODY, NOBODY)
  const link = join(root, 'var')
  symlinkSync(theirs, link)
  const config = createConfig({ dataDir: link, databaseUrl: undefined, logLevel: 'silent' })

  const err = await buildApp(config).then(
    (app) => app.close().then(() => undefined),
    (e: unknown) => e,
  )
  t.ok(err instanceof ForeignOwner, 'the app refuses it')
  t.match(
    (err as Error).message,
    new RegExp(
      `^${link.replaceAll('.', '\\.')} \\(${theirs.replaceAll('.', '\\.')}, where it leads\\) belongs to nobody \\(uid ${NOBODY}\\)`,
    ),
  )
  t.same(readdirSync(theirs), [], 'no database (or anything) was created in their folder')

  const server = await refusedStart(config)
  t.equal(server.code, 78, 'the server exits 78 (EX_CONFIG): a service unit does not restart it forever')
  t.match(server.stderr, /belongs to nobody/)
  const cli = await run('clients', ['list'], config)
  t.equal(cli.code, 78, 'the command line exits 78 too')
  t.match(cli.stderr, /belongs to nobody \(uid 65534\), not to root \(uid 0\) that runs this command/)
  t.same(readdirSync(theirs), [], 'still nothing in their folder')
})

t.test('a foreign-owned data folder (not a link): exit 78, not 1', async (t) => {
  if (!requirePart(t, asRoot, 'root (to chown a folder to another user)', 'run the tests as root')) return
  const dataDir = join(testdir(t, {}), 'var')
  mkdirSync(dataDir, { mode: 0o700 })
  chownSync(dataDir, NOBODY, NOBODY)
  const config = createConfig({ dataDir, databaseUrl: undefined, logLevel: 'silent' })
  const server = await refusedStart(config)
  t.equal(server.code, 78)
  t.match(server.stderr, /^studio-api: .*var belongs to nobody/m)
  const backup = await run('backup', ['backup', '--to', join(dataDir, '..', 'backups')], config)
  t.equal(backup.code, 78, 'studio backup too')
})

t.test('METRICS_HOST that is not loopback: a warning at start naming it', async (t) => {
  t.ok(isLoopbackHost('127.0.0.1') && isLoopbackHost('127.8.9.1') && isLoopbackHost('::1') && isLoopbackHost('localhost'))
  t.ok(isLoopbackHost('[::1]') && isLoopbackHost('::ffff:127.0.0.1'))
  for (const host of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'metrics.internal', '0x7f.1']) t.notOk(isLoopbackHost(host), host)

  const warned = await startServer(t, {
    DATA_DIR: join(testdir(t, {}), 'var'),
    METRICS_HOST: '0.0.0.0',
    METRICS_PORT: String(await freePort()),
  })
  t.equal(await warned.stop(), 0)
  t.match(warned.output(), /"metrics_host":"0\.0\.0\.0".*METRICS_HOST is not a loopback address/, 'warned, naming the host')
  const quiet = await startServer(t, {
    DATA_DIR: join(testdir(t, {}), 'var2'),
    METRICS_HOST: '127.0.0.1',
    METRICS_PORT: String(await freePort()),
  })
  t.equal(await quiet.stop(), 0)
  t.notMatch(quiet.output(), /METRICS_HOST is not a loopback/, 'no warning on loopback')
})

t.test('a backup that fails on a full disk removes its .partial folder', async (t) => {
  if (!requirePart(t, asRoot, 'root (to mount a small tmpfs: a real full disk)', 'run the tests as root')) return
  const root = testdir(t, {})
  const dataDir = join(root, 'var')
  mkdirSync(dataDir, { mode: 0o700 })
  const db = new SQLite(join(dataDir, 'studio.db'))
  db.exec('create table blobs (b)')
  const insert = db.prepare('insert into blobs values (randomblob(4096))')
  for (let i = 0; i < 1024; i++) insert.run()
  db.close()
  const full = join(root, 'full')
  mkdirSync(full)
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tmpfs', full])
  t.teardown(() => execFileSync('umount', ['-l', full]))

  await t.rejects(
    writeSnapshot({ dataDir, into: full, kind: 'backup', keysFromEnvironment: { signingKey: false, pepper: false } }),
    /full|space/i,
    'the snapshot fails: the disk is full',
  )
  t.same(
    readdirSync(full).filter((n) => n.endsWith('.partial')),
    [],
    'no .partial folder left holding the space',
  )
  const cli = await run('backup', ['backup', '--to', full], createConfig({ dataDir, databaseUrl: undefined }))
  t.equal(cli.code, 1, 'studio backup fails')
  t.match(cli.stderr, /full|space/i)
  t.same(
    readdirSync(full).filter((n) => n.endsWith('.partial')),
    [],
    'and leaves no .partial folder either',
  )
  t.ok(existsSync(join(full, '.studio-backup.lock')), 'only the folder’s lock file is there')
})
