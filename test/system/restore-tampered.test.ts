// Restore of a tampered snapshot (third audit, findings 1 and 12): a snapshot is data from outside,
// and restore runs as the server's user. A manifest naming `../escape.txt` wrote beside the folder
// being built, a name climbing to an absolute path changed that file's mode, a symbolic link in
// the snapshot was followed (a file outside it copied in), a 64 MiB file the manifest listed was
// copied, a manifest of `null` was refused with "Cannot read properties of null", and a restore
// into a folder inside a running server's data folder was accepted. Each tampered snapshot below
// is refused, with a message saying why, and nothing outside the target changes: every path under
// the test's folder (and the victim files) keeps its type, mode, size and contents, and no target
// is created. The store is SQLite's whatever the suite's backend (a snapshot is folder work).
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import t, { type Test } from 'tap'
import { createConfig } from '../../config.js'
import { checksum } from '../../features/backup/files.js'
import { RestoreRefused, restoreSnapshot } from '../../features/backup/restore.js'
import { writeSnapshot } from '../../features/backup/snapshot.js'
import { holdServerLock } from '../../plugins/store/in-use.js'
import { run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'

/** Every path under `dir` (links not followed): its type, mode, size and, for a file, its SHA-256. */
function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const rel of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(dir, rel)
    const s = lstatSync(path)
    const kind = s.isSymbolicLink() ? 'link' : s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'special'
    out[rel] = `${kind} ${(s.mode & 0o7777).toString(8)} ${s.size}${kind === 'file' ? ` ${checksum(path).sha256}` : ''}`
  }
  return out
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')

interface Fixture {
  root: string
  snapshot: string
  /** Outside every snapshot and target: what a tampered name aims at. */
  victim: string
}

/** A data folder with a small database and keys, and one genuine snapshot of it. */
async function fixture(t: Test): Promise<Fixture> {
  const root = testdir(t, { victim: { 'secret.txt': 'not yours\n' } })
  const victim = join(root, 'victim', 'secret.txt')
  chmodSync(victim, 0o644)
  const data = join(root, 'data')
  mkdirSync(join(data, 'keys'), { recursive: true, mode: 0o700 })
  const db = new SQLite(join(data, 'studio.db'))
  db.exec('create table notes (text); insert into notes values (1)')
  db.close()
  writeFileSync(join(data, 'keys', 'signing-key.pem'), '-----BEGIN PRIVATE KEY-----\nnot a real key\n-----END PRIVATE KEY-----\n')
  writeFileSync(join(data, 'keys', 'secret-pepper'), 'p'.repeat(43))
  writeFileSync(join(data, 'bootstrap-client.json'), '{"client_id":"cl_x","client_secret":"s"}\n')
  const outcome = await writeSnapshot({
    dataDir: data,
    into: join(root, 'snapshots'),
    kind: 'backup',
    keysFromEnvironment: { signingKey: false, pepper: false },
  })
  return { root, snapshot: outcome.written?.path as string, victim }
}

type Files = Record<string, { bytes: number; sha256: string }>

/** A copy of the snapshot, changed by `tamper` (which may edit its manifest's files). */
function tampered(f: Fixture, name: string, tamper: (dir: string, files: Files, manifest: Record<string, unknown>) => unknown): string {
  const dir = join(f.root, 'tampered', name)
  cpSync(f.snapshot, dir, { recursive: true })
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'))
  const replaced = tamper(dir, manifest.files, manifest)
  writeFileSync(join(dir, 'manifest.json'), replaced === undefined ? JSON.stringify(manifest) : String(replaced))
  return dir
}

/** The restore is refused matching `why`, and nothing under the test's folder changed. */
async function refused(t: Test, f: Fixture, from: string, why: RegExp, target = join(f.root, 'target', 'var')) {
  const before = fingerprint(f.root)
  const err: unknown = await restoreSnapshot({ from, dataDir: target, force: false }).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(err instanceof RestoreRefused, `refused (${String(err)})`)
  t.match((err as Error | undefined)?.message, why, 'saying why')
  t.notMatch((err as Error | undefined)?.message, /Cannot read|undefined|null \(reading/, 'in words, not a TypeError')
  t.same(fingerprint(f.root), before, 'nothing changed under the test folder (names, types, modes, sizes, contents)')
  t.notOk(existsSync(target), 'no target was created')
  t.equal(lstatSync(f.victim).mode & 0o777, 0o644, 'the victim file keeps its mode')
}

t.test('a genuine snapshot restores, and through a DATA_DIR that is a symbolic link into the real folder', async (t) => {
  const f = await fixture(t)
  const target = join(f.root, 'restored')
  const done = await restoreSnapshot({ from: f.snapshot, dataDir: target, force: false })
  t.same(readdirSync(target).sort(), ['bootstrap-client.json', 'keys', 'studio.db'])
  t.equal(done.dataDir, target)
  mkdirSync(join(f.root, 'real'))
  symlinkSync(join(f.root, 'real'), join(f.root, 'link'))
  const viaLink = await restoreSnapshot({ from: f.snapshot, dataDir: join(f.root, 'link'), force: false })
  t.equal(viaLink.dataDir, join(f.root, 'real'), 'restored into the folder the link names')
  t.ok(lstatSync(join(f.root, 'link')).isSymbolicLink(), 'the link is left as it was')
  t.ok(existsSync(join(f.root, 'real', 'studio.db')))
})

t.test('names that leave the folder: .., absolute paths, names a snapshot never holds', async (t) => {
  const f = await fixture(t)
  const content = 'planted\n'
  const listed =
    (name: string, data: string | Buffer = content) =>
    (dir: string, files: Files) => {
      files[name] = { bytes: Buffer.byteLength(data), sha256: sha256(data) }
      // Where main read it from: the name joined to the snapshot's folder.
      const from = join(dir, name)
      mkdirSync(join(from, '..'), { recursive: true })
      if (!existsSync(from)) writeFileSync(from, data)
    }
  const victimText = readFileSync(f.victim)
  const cases: [string, (dir: string, files: Files) => void][] = [
    ['dotdot', listed('../escape.txt')],
    ['dotdot-keys', listed('keys/../../escape2.txt')],
    ['deep', listed(`../../..${f.victim}`, victimText)],
    ['absolute', listed(f.victim, victimText)],
    ['extra', listed('notes.txt')],
    ['big', listed('big.bin', Buffer.alloc(64 << 20))],
    ['backslash', listed('keys\\..\\..\\escape3.txt')],
  ]
  for (const [name, tamper] of cases) {
    await t.test(name, async (t) => {
      const from = tampered(f, name, tamper)
      await refused(t, f, from, /which is no file a snapshot holds/)
    })
  }
})

t.test('links, special files, sizes: each listed file must be a regular file of the listed size', async (t) => {
  const f = await fixture(t)
  const victimSum = checksum(f.victim)
  const linkTo = (relative: string, target: string) => (dir: string, files: Files) => {
    rmSync(join(dir, relative), { recursive: true })
    symlinkSync(target, join(dir, relative))
    if (relative !== 'keys') files[relative] = victimSum
  }
  const keysElsewhere = join(f.root, 'victim', 'keys')
  mkdirSync(keysElsewhere)
  writeFileSync(join(keysElsewhere, 'signing-key.pem'), 'someone else’s key')
  writeFileSync(join(keysElsewhere, 'secret-pepper'), 'someone else’s pepper')
  const cases: [string, (dir: string, files: Files) => void, RegExp][] = [
    ['link-file', linkTo('keys/secret-pepper', f.victim), /keys\/secret-pepper is a symbolic link, not a regular file/],
    ['link-relative', linkTo('bootstrap-client.json', '../../../victim/secret.txt'), /bootstrap-client\.json is a symbolic link/],
    [
      'link-folder',
      (dir, files) => {
        linkTo('keys', keysElsewhere)(dir, files)
        files['keys/signing-key.pem'] = checksum(join(keysElsewhere, 'signing-key.pem'))
        files['keys/secret-pepper'] = checksum(join(keysElsewhere, 'secret-pepper'))
      },
      /keys is a symbolic link, not a regular folder/,
    ],
    [
      'fifo',
      (dir) => {
        rmSync(join(dir, 'bootstrap-client.json'))
        execFileSync('mkfifo', [join(dir, 'bootstrap-client.json')])
      },
      /bootstrap-client\.json is a special file/,
    ],
    [
      'folder-for-file',
      (dir) => {
        rmSync(join(dir, 'keys', 'secret-pepper'))
        mkdirSync(join(dir, 'keys', 'secret-pepper'))
      },
      /keys\/secret-pepper is a folder, not a regular file/,
    ],
    [
      'key-64MiB',
      (dir, files) => {
        const pepper = join(dir, 'keys', 'secret-pepper')
        truncateSync(pepper, 64 << 20)
        files['keys/secret-pepper'] = checksum(pepper)
      },
      /keys\/secret-pepper is 67108864 bytes; such a file is at most 65536/,
    ],
    [
      'grown',
      (dir) => writeFileSync(join(dir, 'keys', 'signing-key.pem'), 'x'.repeat(1 << 20), { flag: 'a' }),
      /keys\/signing-key\.pem is \d+ bytes, and its manifest says \d+/,
    ],
    ['missing', (dir) => rmSync(join(dir, 'studio.db')), /studio\.db is missing/],
  ]
  for (const [name, tamper, why] of cases) {
    await t.test(name, async (t) => {
      const from = tampered(f, name, tamper)
      await refused(t, f, from, why)
    })
  }
})

t.test('a broken manifest is refused in words, whatever it holds', async (t) => {
  const f = await fixture(t)
  const cases: [string, (dir: string, files: Files, m: Record<string, unknown>) => unknown, RegExp][] = [
    ['null', () => 'null', /it is null, not an object/],
    ['array', () => '[]', /it is an array, not an object/],
    ['empty', () => '{}', /its format is missing/],
    ['not-json', () => '{"format": ', /manifest\.json is not JSON/],
    [
      'files-null',
      (_d, _f, m) => {
        m.files = null
      },
      /files is not a set of files/,
    ],
    [
      'files-array',
      (_d, _f, m) => {
        m.files = ['studio.db']
      },
      /files is not a set of files/,
    ],
    [
      'migrations-null',
      (_d, _f, m) => {
        m.migrations = null
      },
      /migrations is not a list of names/,
    ],
    [
      'entry-null',
      (_d, files) => {
        ;(files as Record<string, unknown>)['studio.db'] = null
      },
      /the entry of studio\.db is not a size and a SHA-256/,
    ],
    [
      'negative-size',
      (_d, files) => {
        ;(files['studio.db'] as { bytes: number }).bytes = -1
      },
      /the entry of studio\.db/,
    ],
    [
      'no-database',
      (_d, files) => {
        delete files['studio.db']
      },
      /a sqlite snapshot lists studio\.db/,
    ],
    [
      'keys-missing',
      (_d, _f, m) => {
        delete m.keys
      },
      /keys does not say where each key is kept/,
    ],
    [
      'schema',
      (_d, _f, m) => {
        m.schema = 'public) .* (x'
      },
      /schema is not a PostgreSQL schema name/,
    ],
  ]
  for (const [name, tamper, why] of cases) {
    await t.test(name, async (t) => refused(t, f, tampered(f, name, tamper), why))
  }
  await t.test('a manifest that is a link (to a device)', async (t) => {
    const from = tampered(f, 'manifest-link', () => undefined)
    rmSync(join(from, 'manifest.json'))
    symlinkSync('/dev/zero', join(from, 'manifest.json'))
    await refused(t, f, from, /manifest\.json is a symbolic link, not a regular file/)
  })
  await t.test('the command line: exit 1, the reason, no stack', async (t) => {
    const from = tampered(f, 'cli-null', () => 'null')
    const res = await run(
      'backup',
      ['restore', '--from', from],
      createConfig({ dataDir: join(f.root, 'cli-target'), databaseUrl: undefined }),
    )
    t.equal(res.code, 1)
    t.match(res.stderr, /^studio restore: \S+manifest\.json is not a manifest this version writes: it is null, not an object/m)
    t.notMatch(res.stderr, /Cannot read properties/)
    t.notOk(existsSync(join(f.root, 'cli-target')))
  })
})

t.test('a target inside a data folder is refused: a running server’s, or one holding a database', async (t) => {
  const f = await fixture(t)
  const running = join(f.root, 'running')
  mkdirSync(running, { mode: 0o700 })
  writeFileSync(join(running, 'studio.db'), '')
  const lock = holdServerLock(running)
  t.teardown(() => lock.release())
  await refused(t, f, f.snapshot, /is inside the data folder .*running \(a server is using it\)/, join(running, 'restored'))
  await refused(t, f, f.snapshot, /is inside the data folder .*running/, join(running, 'a', 'b'))
  // Through a link whose own path looks like somewhere else.
  symlinkSync(running, join(f.root, 'elsewhere'))
  await refused(t, f, f.snapshot, /is inside the data folder .*running/, join(f.root, 'elsewhere', 'restored'))
  await refused(t, f, f.snapshot, /is inside the data folder .*data \(it holds a database\)/, join(f.root, 'data', 'restored'))
  await refused(t, f, f.snapshot, /overlap: restore into a folder outside the snapshot/, join(f.snapshot, 'restored'))
})
