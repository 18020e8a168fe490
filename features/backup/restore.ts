// Restore: a snapshot (snapshot.ts, or postgres.ts's) becomes the data folder a server starts on.
//
// Checked before anything is touched: the snapshot is finished (not a `.partial` folder), its
// manifest is one this version reads, it holds no migration this version does not know (it was
// written by a newer version), and no server is using the target folder (in-use.ts: a running
// server's lock). A target that already holds anything is refused unless `force`, which moves
// it aside (`<DATA_DIR>.before-restore-<time>`): restore never deletes a data folder.
//
// The new folder is built beside the target (`<DATA_DIR>.restoring-<pid>`): each file copied
// owner-only, its copy's SHA-256 compared with the manifest's, the database's copy integrity-
// checked, everything fsynced; then it is renamed into place in one step. A restore killed
// midway leaves the target as it was.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { serverRunning } from '../../plugins/store/in-use.js'
import { migrationNames } from '../../plugins/store/migrations.js'
import { makeDirs, privateDir } from '../../plugins/store/private-files.js'
import { checksum, copyPrivate, fsyncPath, humanBytes, isPartial, sizeOf, stamp } from './files.js'
import { POSTGRES_DUMP, restorePostgres } from './postgres.js'
import { checkIntegrity, DATABASE_FILE, type Manifest, SNAPSHOT_FORMAT } from './snapshot.js'

/** A restore that would lose data or cannot work: its message says why and what to do. */
export class RestoreRefused extends Error {}

export interface RestoreOptions {
  /** The snapshot's folder (or its manifest.json). */
  from: string
  dataDir: string
  force: boolean
  /** PostgreSQL snapshots: the (empty) database to restore into. */
  databaseUrl?: string | undefined
  now?: () => Date
}

export interface Restored {
  dataDir: string
  manifest: Manifest
  /** Where the folder that was there went (with `force`). */
  movedAside: string | undefined
  /** What the restored database holds, counted on it. */
  counts: Record<string, number>
}

/** The snapshot's folder and manifest, refused when it is unfinished or not one. */
export function readSnapshot(from: string): { dir: string; manifest: Manifest } {
  const dir = resolve(basename(from) === 'manifest.json' ? dirname(from) : from)
  if (isPartial(basename(dir))) {
    throw new RestoreRefused(`${dir} is an unfinished snapshot (its writing was interrupted): restore a finished one`)
  }
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new RestoreRefused(
      code === 'ENOENT'
        ? `${dir} is not a snapshot: it has no manifest.json (npm run backup writes folders named studio-backup-<time>)`
        : `${dir}/manifest.json cannot be read: ${(err as Error).message}`,
    )
  }
  if (manifest.format !== SNAPSHOT_FORMAT) {
    throw new RestoreRefused(`${dir} is not a snapshot this version reads (format ${JSON.stringify(manifest.format)})`)
  }
  const unknown = manifest.migrations.filter((name) => !migrationNames().includes(name))
  if (unknown.length > 0) {
    throw new RestoreRefused(
      `${dir} was written by a newer version of studio-api (its database has migration ${unknown.join(', ')}, which this version does not know): restore it with that version`,
    )
  }
  return { dir, manifest }
}

/** Copies a snapshot file into the folder being built, checking the copy against the manifest. */
function copyChecked(dir: string, manifest: Manifest, relative: string, into: string): void {
  const expected = manifest.files[relative]
  const from = join(dir, relative)
  if (!expected || !existsSync(from)) throw new RestoreRefused(`${dir} is damaged: ${relative} is missing`)
  const copied = checksum(copyPrivate(from, into, relative))
  if (copied.sha256 !== expected.sha256 || copied.bytes !== expected.bytes) {
    throw new RestoreRefused(`${dir} is damaged: ${relative} does not match the checksum in its manifest`)
  }
}

/**
 * What is in a data folder, in words, for the refusal. Not opened: even a read-only connection
 * creates the -wal and -shm of a database in WAL mode, and the refused folder must stay as it is.
 */
function holding(dataDir: string, names: string[]): string {
  if (!names.includes(DATABASE_FILE)) return `files (${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''})`
  return `a database (${DATABASE_FILE}, ${humanBytes(sizeOf(join(dataDir, DATABASE_FILE)))})`
}

const refuseRunning = (dataDir: string): void => {
  if (serverRunning(dataDir)) {
    throw new RestoreRefused(`a server is using ${dataDir}: stop it first (a restore never replaces the data under a running server)`)
  }
}

export async function restoreSnapshot(options: RestoreOptions): Promise<Restored> {
  const { dir, manifest } = readSnapshot(options.from)
  const dataDir = resolve(options.dataDir)
  const now = options.now ?? (() => new Date())
  const folderFiles = Object.keys(manifest.files).filter((relative) => relative !== POSTGRES_DUMP)
  if (manifest.store === 'postgres' && !options.databaseUrl) {
    throw new RestoreRefused(`${dir} is a PostgreSQL snapshot: set DATABASE_URL to the (empty) database to restore it into`)
  }
  // A PostgreSQL snapshot whose keys came from the environment has nothing for the data folder.
  if (manifest.store === 'postgres' && options.databaseUrl && folderFiles.length === 0) {
    const counts = await restorePostgres(dir, manifest, options.databaseUrl)
    return { dataDir, manifest, movedAside: undefined, counts }
  }

  // The target: not in use, and empty unless forced (then moved aside, never deleted).
  refuseRunning(dataDir)
  const present = existsSync(dataDir) ? readdirSync(dataDir) : []
  const aside = `${dataDir}.before-restore-${stamp(now())}`
  if (present.length > 0 && !options.force) {
    throw new RestoreRefused(
      `${dataDir} already holds ${holding(dataDir, present)}: restore into a new folder (DATA_DIR=…), or pass --force to move this one aside to ${aside} (nothing is deleted)`,
    )
  }

  // The new folder, built beside the target and renamed into place once whole.
  const building = `${dataDir}.restoring-${process.pid}`
  rmSync(building, { recursive: true, force: true })
  makeDirs(dirname(dataDir))
  mkdirSync(building, { mode: 0o700 })
  privateDir(building)
  try {
    for (const relative of folderFiles) copyChecked(dir, manifest, relative, building)
    const counts =
      manifest.store === 'sqlite'
        ? checkIntegrity(join(building, DATABASE_FILE)).counts
        : await restorePostgres(dir, manifest, options.databaseUrl ?? '')
    if (existsSync(join(building, 'keys'))) fsyncPath(join(building, 'keys'))
    fsyncPath(building)

    // A server may have started meanwhile.
    refuseRunning(dataDir)
    let movedAside: string | undefined
    if (existsSync(dataDir)) {
      if (readdirSync(dataDir).length === 0) {
        rmdirSync(dataDir)
      } else {
        renameSync(dataDir, aside)
        movedAside = aside
      }
    }
    renameSync(building, dataDir)
    fsyncPath(dirname(dataDir))
    return { dataDir, manifest, movedAside, counts }
  } catch (err) {
    rmSync(building, { recursive: true, force: true })
    throw err
  }
}
