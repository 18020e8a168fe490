// Backups never land inside the data folder, however either folder is spelt (third audit, finding
// 4): `--to` a symbolic link to a folder of DATA_DIR, DATA_DIR given as a link, BACKUP_DIR with
// `x/../`, DATA_DIR ending in `/.` or holding `//`, BACKUP_DIR a link into DATA_DIR were all
// accepted and written inside, and a DATA_DIR with a trailing slash put the snapshot before a
// migration inside it. Folders are compared as they really are (links resolved, the nearest
// existing parent of one not made yet): at start (exit 78), by `studio backup` (exit 64), and by the
// snapshot itself, whoever asks for it (a link made after the start). SQLite (folder work).
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { ConfigError, createConfig, loadConfig } from '../../config.js'
import { snapshotBeforeMigrating, snapshotsDir } from '../../features/backup/premigration.js'
import { writeSnapshot } from '../../features/backup/snapshot.js'
import { isWithin, realPath } from '../../lib/real-path.js'
import { run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'

/** A data folder holding a small database (what a snapshot copies), and links around it. */
function places(t: Test) {
  const root = testdir(t, {})
  const data = join(root, 'var')
  mkdirSync(join(data, 'inner'), { recursive: true, mode: 0o700 })
  const db = new SQLite(join(data, 'studio.db'))
  db.exec('create table notes (text)')
  db.close()
  symlinkSync(data, join(root, 'data-link'))
  symlinkSync(join(data, 'inner'), join(root, 'inner-link'))
  // A link not yet pointing at anything that exists: a mkdir through it lands inside DATA_DIR.
  symlinkSync(join(data, 'not-yet'), join(root, 'dangling-link'))
  return { root, data }
}

/** Everything under the data folder: what "nothing written inside it" is checked against. */
const inside = (data: string) => readdirSync(data, { recursive: true, encoding: 'utf8' }).sort()

t.test('real paths: links, .., /. and // resolved; a path not made yet through its nearest existing parent', async (t) => {
  const { root, data } = places(t)
  t.equal(realPath(join(root, 'data-link')), data)
  t.equal(realPath(`${join(root, 'data-link')}/./x//y/`), join(data, 'x', 'y'))
  t.equal(realPath(join(root, 'elsewhere', '..', 'var', 'b')), join(data, 'b'))
  t.equal(realPath(join(root, 'dangling-link', 'a')), join(data, 'not-yet', 'a'), 'a dangling link is followed')
  t.ok(isWithin(join(root, 'inner-link', 'backups'), data))
  t.notOk(isWithin(join(root, 'var-snapshots'), data), 'a sibling whose name starts alike is not inside')
  t.notOk(isWithin(join(root, 'var..x'), data))
})

t.test('at start: BACKUP_DIR and DATA_DIR overlapping in any spelling is refused (exit 78 material)', async (t) => {
  const { root, data } = places(t)
  const cases: [string, string][] = [
    [join(root, 'data-link'), join(data, 'backups')], // DATA_DIR given as a link
    [data, join(root, 'data-link', 'backups')], // BACKUP_DIR through a link to it
    [data, join(root, 'inner-link')], // BACKUP_DIR a link to a folder inside it
    [data, join(root, 'dangling-link')], // a link to a folder inside it not made yet
    [data, `${root}/x/../var/backups`], // x/../
    [`${data}/.`, join(data, 'backups')], // DATA_DIR ending in /.
    [`${root}//var`, join(data, 'backups')], // DATA_DIR holding //
    [`${data}/`, `${data}//backups/`],
    [join(data, 'inner'), join(root, 'data-link')], // DATA_DIR inside BACKUP_DIR
  ]
  for (const [dataDir, backupDir] of cases) {
    try {
      loadConfig({ DATA_DIR: dataDir, BACKUP_DIR: backupDir })
      t.fail(`DATA_DIR=${dataDir} BACKUP_DIR=${backupDir} accepted`)
    } catch (err) {
      t.ok(err instanceof ConfigError, `DATA_DIR=${dataDir} BACKUP_DIR=${backupDir} refused`)
      t.match((err as Error).message, /BACKUP_DIR .* must be outside DATA_DIR/)
    }
  }
  t.equal(loadConfig({ DATA_DIR: data, BACKUP_DIR: join(root, 'backups') }).backupDir, join(root, 'backups'), 'a folder beside it is fine')
})

t.test('a DATA_DIR written with a trailing slash, /. or //: the snapshot before a migration goes beside it', async (t) => {
  const { root, data } = places(t)
  for (const spelling of [`${data}/`, `${data}/.`, `${root}//var//`]) {
    const config = loadConfig({ DATA_DIR: spelling })
    t.equal(config.dataDir, data, `${spelling} is ${data}`)
    t.equal(snapshotsDir(config), `${data}-snapshots`)
  }
  const before = inside(data)
  const report = { info: () => {}, warn: () => {} }
  await snapshotBeforeMigrating(loadConfig({ DATA_DIR: `${data}/` }), report)(['999_next'], 'sqlite')
  t.equal(readdirSync(`${data}-snapshots`).filter((n) => n.startsWith('studio-before-migration-')).length, 1, 'written beside it')
  t.same(inside(data), before, 'nothing written inside the data folder')
})

t.test('the snapshot itself refuses a folder that is really inside the data folder (a link made after the start)', async (t) => {
  const { root, data } = places(t)
  const before = inside(data)
  const keys = { signingKey: false, pepper: false }
  for (const into of [join(root, 'inner-link'), join(root, 'dangling-link'), join(root, 'data-link', 'b'), `${root}/x/../var/c`]) {
    await t.rejects(
      writeSnapshot({ dataDir: data, into, kind: 'backup', keysFromEnvironment: keys }),
      /overlap .*links resolved\): snapshots go outside the data folder/,
      `into ${into} refused`,
    )
  }
  await t.rejects(
    writeSnapshot({ dataDir: join(root, 'data-link'), into: join(data, 'backups'), kind: 'backup', keysFromEnvironment: keys }),
    /overlap/,
    'DATA_DIR as a link',
  )
  t.same(inside(data), before, 'nothing written inside the data folder')
  t.notOk(existsSync(join(data, 'not-yet')), 'not even through the dangling link')
})

t.test('studio backup --to: a link to a folder of DATA_DIR, and DATA_DIR as a link, exit 64', async (t) => {
  const { root, data } = places(t)
  const before = inside(data)
  for (const [dataDir, to] of [
    [data, join(root, 'inner-link')],
    [join(root, 'data-link'), join(data, 'backups')],
    [data, join(root, 'dangling-link')],
  ] as const) {
    const res = await run('backup', ['backup', '--to', to], createConfig({ dataDir, databaseUrl: undefined }))
    t.equal(res.code, 64, `--to ${to} with DATA_DIR ${dataDir}: ${res.stderr}`)
    t.match(res.stderr, /overlap .*links resolved\): backups live outside the data folder/)
  }
  t.same(inside(data), before, 'nothing written inside the data folder')
})
