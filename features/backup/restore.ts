// Restore: a snapshot (snapshot.ts, or postgres.ts's) becomes the data folder a server starts on.
//
// Checked before anything is touched: the snapshot is finished (not a `.partial` folder), its
// manifest is one this version writes and names only the files a snapshot holds, each a regular
// file of the size it says (manifest.ts: a snapshot is data from outside), it holds no migration
// this version does not know (it was written by a newer version), no server is using the target
// folder (in-use.ts: a running server's lock), and the target is inside no data folder (compared
// as real paths, links resolved). A target that already holds anything is refused unless `force`, which moves
// it aside (`<DATA_DIR>.before-restore-<time>`): restore never deletes a data folder.
//
// The new folder is built beside the target (`<DATA_DIR>.restoring-<pid>`): each file copied
// owner-only, its copy's SHA-256 compared with the manifest's, the database's copy integrity-
// checked, everything fsynced; then it is renamed into place in one step. A restore killed
// midway leaves the target as it was.
import { createHash } from 'node:crypto'
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { overlap, realPath } from '../../lib/real-path.js'
import { serverLockFile, serverRunning } from '../../plugins/store/in-use.js'
import { makeDirs, privateDir, privateFile } from '../../plugins/store/private-files.js'
import { fsyncPath, humanBytes, sizeOf, stamp } from './files.js'
import { READ_NO_FOLLOW, RestoreRefused, readSnapshot } from './manifest.js'
import { POSTGRES_DUMP, restorePostgres } from './postgres.js'
import { checkIntegrity, DATABASE_FILE, type Manifest } from './snapshot.js'

export { RestoreRefused }

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

/**
 * Copies a snapshot file into the folder being built (a new file, owner-only, created where no
 * file or link was), reading through a descriptor that follows no link and no more than the
 * manifest's size, and checks the copy's SHA-256 against the manifest.
 */
function copyChecked(dir: string, manifest: Manifest, relative: string, into: string): void {
  const expected = manifest.files[relative] as { bytes: number; sha256: string }
  const damaged = () => new RestoreRefused(`${dir} is damaged: ${relative} does not match the checksum in its manifest`)
  const folder = join(into, dirname(relative))
  if (!existsSync(folder)) mkdirSync(folder, { mode: 0o700 })
  const from = openSync(join(dir, relative), READ_NO_FOLLOW)
  try {
    const stat = fstatSync(from)
    if (!stat.isFile() || stat.size !== expected.bytes) throw damaged()
    const to = openSync(join(into, relative), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600)
    const hash = createHash('sha256')
    try {
      const buffer = Buffer.allocUnsafe(1 << 20)
      let left = expected.bytes
      while (left > 0) {
        const n = readSync(from, buffer, 0, Math.min(buffer.length, left), null)
        if (n === 0) throw damaged()
        hash.update(buffer.subarray(0, n))
        for (let written = 0; written < n; ) written += writeSync(to, buffer, written, n - written)
        left -= n
      }
      // Grown since it was measured: not the file the manifest describes.
      if (readSync(from, buffer, 0, 1, null) !== 0) throw damaged()
      fsyncSync(to)
    } finally {
      closeSync(to)
    }
    privateFile(join(into, relative))
    if (hash.digest('hex') !== expected.sha256) throw damaged()
  } finally {
    closeSync(from)
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

/** The data folder a folder lies inside of (one holding a server's lock or a database), if any. */
function enclosingDataDir(dir: string): string | undefined {
  for (let parent = dirname(dir); parent !== dir; dir = parent, parent = dirname(dir)) {
    if (existsSync(serverLockFile(parent)) || existsSync(join(parent, DATABASE_FILE))) return parent
  }
  return undefined
}

/** Refused before anything is written: a target inside a data folder (a running server's or not), or overlapping the snapshot. */
function refusePlace(dataDir: string, snapshot: string): void {
  if (overlap(dataDir, snapshot)) {
    throw new RestoreRefused(`${dataDir} and the snapshot ${snapshot} overlap: restore into a folder outside the snapshot`)
  }
  const outer = enclosingDataDir(dataDir)
  if (outer) {
    const running = serverRunning(outer) ? 'a server is using it' : 'it holds a database'
    throw new RestoreRefused(
      `${dataDir} is inside the data folder ${outer} (${running}): restore into a folder of its own, beside it, never inside one (a data folder must hold no copy of an erased lead)`,
    )
  }
}

export async function restoreSnapshot(options: RestoreOptions): Promise<Restored> {
  const { dir, manifest } = readSnapshot(options.from)
  // Where the folder really is (DATA_DIR may be, or pass through, a symbolic link).
  const dataDir = realPath(options.dataDir)
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

  // The target: not in use, nowhere inside a data folder, and empty unless forced (then moved aside, never deleted).
  refuseRunning(dataDir)
  refusePlace(dataDir, dir)
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
