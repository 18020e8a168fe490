// One snapshot of the embedded store: a folder holding a consistent copy of the database, the
// token signing key, the hash key of client secrets (the pepper) and the bootstrap credentials,
// with a manifest (what it holds, each file's size and SHA-256). Everything a restore needs.
//
// Online: the copy is read in one read transaction of a connection of its own, which in WAL mode
// never blocks the server's writer (nor is blocked by it). Two ways, same result:
//   - `VACUUM INTO` (the default): SQLite rebuilds the database into the new file, compact;
//   - SQLite's online backup API (better-sqlite3's `backup()`), in one step: the pages as they
//     are. In several steps, every commit of the server's writer (another connection) would
//     restart it, and a busy server would never let it finish.
// README "Backups" has what each costs a lead flood (bench/modes/backup.ts measures it).
//
// Crash-safe: written into a hidden `.<name>.partial` folder, checked (`PRAGMA integrity_check`
// on the copy, not the source), every file and the folder fsynced, and only then renamed to its
// name; the parent folder is fsynced after. A snapshot killed at any point leaves at most a
// `.partial` folder, which is not named as a finished one and is removed by the next snapshot
// into the same folder. Snapshots into one folder take turns (an exclusive lock on a file
// there), so that next one never removes a folder still being written. Files 0600, folders 0700.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { overlap, realPath } from '../../lib/real-path.js'
import { refuseLostLog, sqliteFile } from '../../plugins/store/open.js'
import { makeDirs, privateDir, privateFile, touchPrivateFile } from '../../plugins/store/private-files.js'
import { checksum, copyPrivate, finished, fsyncPath, isPartial, PREFIX, partialName, type SnapshotKind, sizeOf, stamp } from './files.js'

export const SNAPSHOT_FORMAT = 'studio-api snapshot 1'

/** How a key the server uses is kept, as the snapshot records it. */
export type KeySource = 'in snapshot' | 'environment' | 'absent'

export interface Manifest {
  format: typeof SNAPSHOT_FORMAT
  kind: SnapshotKind
  /** When the copy was taken (its read transaction began at about this time). */
  taken_at: string
  store: 'sqlite' | 'postgres'
  /** PostgreSQL: the schema dumped (the connection's current schema). */
  schema?: string
  /** The data folder it was taken from. */
  data_dir: string
  /** The migrations applied to the copy. */
  migrations: string[]
  counts: Record<string, number>
  /** Path in the snapshot (`/`-separated) → size and SHA-256. */
  files: Record<string, { bytes: number; sha256: string }>
  keys: { signing_key: KeySource; secret_pepper: KeySource }
}

export interface Snapshot {
  path: string
  manifest: Manifest
  /** Total size of its files. */
  bytes: number
  seconds: number
  /** Older snapshots removed to keep the newest `keep`. */
  removed: string[]
}

export type SnapshotOutcome = { written: Snapshot; skipped?: undefined } | { skipped: string; written?: undefined }

export type CopyMethod = 'vacuum' | 'backup-api'

export interface SnapshotOptions {
  dataDir: string
  /** The folder the snapshot goes into (created 0700 if missing). */
  into: string
  kind: SnapshotKind
  /** Whether the server takes its keys from the environment (JWT_PRIVATE_KEY, SECRET_PEPPER). */
  keysFromEnvironment: { signingKey: boolean; pepper: boolean }
  method?: CopyMethod
  /** Keep the newest this many finished snapshots of this kind in `into`; remove the older ones. */
  keep?: number
  /** Write nothing if a snapshot of this kind finished this recently (another instance wrote it). */
  skipIfNewerThanMs?: number
  /** How long to wait for another snapshot into the same folder; 0: skip instead. */
  waitForLockMs?: number
  now?: () => Date
}

/** The database's three files and the key files, relative to the data folder. */
export const KEY_FILES = { signingKey: 'keys/signing-key.pem', pepper: 'keys/secret-pepper' } as const
export const BOOTSTRAP_FILE = 'bootstrap-client.json'
export const DATABASE_FILE = 'studio.db'

/**
 * Takes turns with other snapshots into the same folder: an exclusive lock on an empty SQLite
 * file there (the kernel drops it if the process dies). Undefined when another holds it past `waitMs`.
 */
function lockFolder(dir: string, waitMs: number): { release(): void } | undefined {
  const file = join(dir, '.studio-backup.lock')
  touchPrivateFile(file)
  const lock = new SQLite(file)
  try {
    lock.pragma(`busy_timeout = ${Math.max(0, Math.round(waitMs))}`)
    lock.exec('begin exclusive')
  } catch (err) {
    lock.close()
    if ((err as { code?: string }).code === 'SQLITE_BUSY') return undefined
    throw err
  }
  return {
    release: () => {
      lock.exec('rollback')
      lock.close()
    },
  }
}

const tableExists = (db: SQLite.Database, name: string): boolean =>
  db.prepare(`select 1 from sqlite_master where type = 'table' and name = ?`).get(name) !== undefined

const count = (db: SQLite.Database, sqlText: string): number => (db.prepare(sqlText).get() as { n: number }).n

/** What a copy holds, read from the copy (it may predate some tables: a snapshot before a migration). */
export function describeCopy(db: SQLite.Database): { migrations: string[]; counts: Record<string, number> } {
  const counts: Record<string, number> = {}
  if (tableExists(db, 'leads')) counts.leads = count(db, 'select count(*) as n from leads')
  if (tableExists(db, 'clients')) counts.clients = count(db, 'select count(*) as n from clients')
  if (tableExists(db, 'webhook_endpoints')) counts.webhook_endpoints = count(db, 'select count(*) as n from webhook_endpoints')
  if (tableExists(db, 'webhook_deliveries')) {
    counts.pending_deliveries = count(db, `select count(*) as n from webhook_deliveries where status = 'pending'`)
  }
  const migrations = tableExists(db, 'kysely_migration')
    ? (db.prepare('select name from kysely_migration order by name').all() as { name: string }[]).map((r) => r.name)
    : []
  return { migrations, counts }
}

/** `PRAGMA integrity_check` on a database file; throws with SQLite's findings unless it is `ok`. */
export function checkIntegrity(file: string): { migrations: string[]; counts: Record<string, number> } {
  const db = new SQLite(file, { fileMustExist: true })
  try {
    const rows = db.pragma('integrity_check') as { integrity_check: string }[]
    if (rows.length !== 1 || rows[0]?.integrity_check !== 'ok') {
      throw new Error(
        `the copy of the database failed its integrity check: ${rows
          .slice(0, 5)
          .map((r) => r.integrity_check)
          .join('; ')}`,
      )
    }
    return describeCopy(db)
  } finally {
    db.close()
  }
}

/** Copies the database into `to`, consistent as of one moment, without blocking the server's writer. */
async function copyDatabase(dataDir: string, to: string, method: CopyMethod): Promise<void> {
  const file = sqliteFile(dataDir)
  if (!existsSync(file)) throw new Error(`there is no database at ${file}: is DATA_DIR the server's data folder?`)
  refuseLostLog(dataDir)
  const source = new SQLite(file, { fileMustExist: true })
  try {
    source.pragma('busy_timeout = 5000')
    if (method === 'vacuum') {
      source.prepare('vacuum into ?').run(to)
    } else {
      // One step: all the pages in one read transaction (see the top of this file).
      await source.backup(to, { progress: () => 0x7fffffff })
      // The copy keeps the source's WAL flag; as a rollback-journal file it is one file, with
      // no -wal or -shm beside it when it is opened (the integrity check, a restore).
      const copy = new SQLite(to)
      copy.pragma('journal_mode = DELETE')
      copy.close()
    }
  } finally {
    source.close()
  }
  privateFile(to)
}

/** What the store's part of a snapshot put into the folder being written. */
export interface DatabasePart {
  store: Manifest['store']
  schema?: string
  migrations: string[]
  counts: Record<string, number>
  files: Manifest['files']
}

/** The embedded store's part: the database copied, then integrity-checked and counted on the copy. */
export function sqlitePart(dataDir: string, method: CopyMethod = 'vacuum') {
  return async (partial: string): Promise<DatabasePart> => {
    const copy = join(partial, DATABASE_FILE)
    await copyDatabase(dataDir, copy, method)
    const { migrations, counts } = checkIntegrity(copy)
    fsyncPath(copy)
    return { store: 'sqlite', migrations, counts, files: { [DATABASE_FILE]: checksum(copy) } }
  }
}

/**
 * Writes one snapshot of the data folder into `options.into` (see the top of this file): the
 * store's part (`database`, by default the embedded store's), then the keys and the manifest.
 */
export async function writeSnapshot(
  options: SnapshotOptions,
  database: (partial: string) => Promise<DatabasePart> = sqlitePart(options.dataDir, options.method),
): Promise<SnapshotOutcome> {
  const { dataDir, into, kind } = options
  const now = options.now ?? (() => new Date())
  // Never inside the data folder (which must hold no copy of an erased lead), however either is
  // spelt: compared as they really are, links resolved (a BACKUP_DIR made a link into it later too).
  if (overlap(into, dataDir)) {
    throw new Error(
      `${into} and the data folder ${dataDir} overlap (${realPath(into)}, ${realPath(dataDir)}, links resolved): snapshots go outside the data folder`,
    )
  }
  makeDirs(into, 0o700)
  privateDir(into)
  const waitMs = options.waitForLockMs ?? 60_000
  const lock = lockFolder(into, waitMs)
  if (!lock) {
    if (waitMs === 0) return { skipped: `another snapshot is being written into ${into}` }
    throw new Error(`another snapshot is still being written into ${into}; try again when it has finished`)
  }
  try {
    // What a killed snapshot left (none is being written: we hold the folder's lock).
    for (const name of readdirSync(into)) if (isPartial(name)) rmSync(join(into, name), { recursive: true, force: true })
    if (options.skipIfNewerThanMs !== undefined) {
      const newest = finished(into, kind).at(-1)
      if (newest && now().getTime() - newest.time < options.skipIfNewerThanMs) {
        return { skipped: `${newest.name} was written ${Math.round((now().getTime() - newest.time) / 1000)} s ago` }
      }
    }
    const started = now()
    let name = `${PREFIX[kind]}${stamp(started)}`
    for (let n = 2; existsSync(join(into, name)); n++) name = `${PREFIX[kind]}${stamp(started)}-${n}`
    const partial = join(into, partialName(name))
    mkdirSync(partial, { mode: 0o700 })
    try {
      return await writeInto(partial, name, started)
    } catch (err) {
      // A failed snapshot (a full disk, a failed check) gives its space back now, not at the next one.
      rmSync(partial, { recursive: true, force: true })
      throw err
    }
  } finally {
    lock.release()
  }

  async function writeInto(partial: string, name: string, started: Date): Promise<SnapshotOutcome> {
    privateDir(partial)

    const { files, ...part } = await database(partial)
    const keySource = (relative: string, fromEnvironment: boolean): KeySource => {
      if (fromEnvironment) return 'environment'
      const from = join(dataDir, relative)
      if (!existsSync(from)) return 'absent'
      files[relative] = checksum(copyPrivate(from, partial, relative))
      return 'in snapshot'
    }
    const keys = {
      signing_key: keySource(KEY_FILES.signingKey, options.keysFromEnvironment.signingKey),
      secret_pepper: keySource(KEY_FILES.pepper, options.keysFromEnvironment.pepper),
    }
    if (existsSync(join(dataDir, BOOTSTRAP_FILE))) {
      files[BOOTSTRAP_FILE] = checksum(copyPrivate(join(dataDir, BOOTSTRAP_FILE), partial, BOOTSTRAP_FILE))
    }
    if (existsSync(join(partial, 'keys'))) fsyncPath(join(partial, 'keys'))

    const manifest: Manifest = {
      format: SNAPSHOT_FORMAT,
      kind,
      taken_at: started.toISOString(),
      store: part.store,
      ...(part.schema !== undefined && { schema: part.schema }),
      data_dir: dataDir,
      migrations: part.migrations,
      counts: part.counts,
      files,
      keys,
    }
    const manifestFile = join(partial, 'manifest.json')
    writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 })
    privateFile(manifestFile)
    fsyncPath(manifestFile)
    fsyncPath(partial)

    const path = join(into, name)
    renameSync(partial, path)
    fsyncPath(into)

    const removed = options.keep === undefined ? [] : rotate(into, kind, options.keep)
    const bytes = Object.values(files).reduce((sum, f) => sum + f.bytes, sizeOf(join(path, 'manifest.json')))
    return { written: { path, manifest, bytes, seconds: (now().getTime() - started.getTime()) / 1000, removed } }
  }
}

/** Removes the oldest finished snapshots of a kind beyond the newest `keep`; returns their paths. */
export function rotate(dir: string, kind: SnapshotKind, keep: number): string[] {
  const all = finished(dir, kind)
  const old = all.slice(0, Math.max(0, all.length - keep)).map((s) => join(dir, s.name))
  for (const path of old) rmSync(path, { recursive: true, force: true })
  if (old.length > 0) fsyncPath(dir)
  return old
}
