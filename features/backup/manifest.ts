// Reading a snapshot to restore it: a snapshot is data from outside (a folder anyone with write
// access to the backups could have changed, or a copy from another machine), and a restore runs
// as the server's user, often root. So it is trusted for nothing but its contents, and only after
// everything in it is checked, before anything is written:
//   - its manifest is one this version writes (each field of the right type), read from a regular
//     file of at most 1 MiB (never a link, a FIFO or a device);
//   - it names only the files a snapshot holds (studio.db, the two key files, the bootstrap
//     credentials, PostgreSQL's dump): a name with `..`, an absolute path or any other name is
//     refused, so a restore writes nowhere but the folder it builds;
//   - each of them is a regular file in the snapshot's folder (no symbolic link, on the file or on
//     `keys/`; no FIFO or device), of exactly the size the manifest says, and no larger than such a
//     file can be (the keys and credentials are a few hundred bytes);
//   - the copies are then read through descriptors that follow no link, at most the manifest's
//     size, and their SHA-256 compared with the manifest's (restore.ts).
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, realpathSync, type Stats } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { migrationNames } from '../../plugins/store/migrations.js'
import { isPartial } from './files.js'
import { POSTGRES_DUMP } from './postgres.js'
import { BOOTSTRAP_FILE, DATABASE_FILE, KEY_FILES, type KeySource, type Manifest, SNAPSHOT_FORMAT } from './snapshot.js'

/** A restore that would lose data, cannot work, or reads a snapshot it must not trust: its message says why. */
export class RestoreRefused extends Error {}

const KiB = 1024
/** The most a manifest may weigh (a real one is well under 2 kB). */
const MAX_MANIFEST = 1024 * KiB

/** Every file a snapshot may hold, and the most it may weigh (the database and dump: what the manifest says). */
export const SNAPSHOT_FILES: Readonly<Record<string, number>> = {
  [DATABASE_FILE]: Number.MAX_SAFE_INTEGER,
  [POSTGRES_DUMP]: Number.MAX_SAFE_INTEGER,
  [KEY_FILES.signingKey]: 64 * KiB,
  [KEY_FILES.pepper]: 64 * KiB,
  [BOOTSTRAP_FILE]: 64 * KiB,
}

const KEY_SOURCES: KeySource[] = ['in snapshot', 'environment', 'absent']
/** open(2) flags for reading a snapshot's file: no link followed, a FIFO never waited on. */
export const READ_NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0

/** What is wrong with a parsed manifest, in words; undefined when it is one this version writes. */
function manifestProblem(m: unknown): string | undefined {
  if (!isObject(m)) return `it is ${m === null ? 'null' : Array.isArray(m) ? 'an array' : typeof m}, not an object`
  if (m.format !== SNAPSHOT_FORMAT) return `its format is ${JSON.stringify(m.format) ?? 'missing'}, not "${SNAPSHOT_FORMAT}"`
  if (m.kind !== 'backup' && m.kind !== 'before-migration') return 'its kind is neither backup nor before-migration'
  if (m.store !== 'sqlite' && m.store !== 'postgres') return 'its store is neither sqlite nor postgres'
  if (typeof m.taken_at !== 'string' || Number.isNaN(Date.parse(m.taken_at))) return 'taken_at is not a time'
  if (typeof m.data_dir !== 'string') return 'data_dir is not a path'
  if (m.schema !== undefined && (typeof m.schema !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(m.schema)))
    return 'schema is not a PostgreSQL schema name'
  if (!Array.isArray(m.migrations) || !m.migrations.every((n) => typeof n === 'string')) return 'migrations is not a list of names'
  if (!isObject(m.counts) || !Object.values(m.counts).every(isCount)) return 'counts is not a set of counts'
  if (
    !isObject(m.keys) ||
    !KEY_SOURCES.includes(m.keys.signing_key as KeySource) ||
    !KEY_SOURCES.includes(m.keys.secret_pepper as KeySource)
  )
    return 'keys does not say where each key is kept'
  if (!isObject(m.files)) return 'files is not a set of files'
  for (const [name, entry] of Object.entries(m.files)) {
    if (!Object.hasOwn(SNAPSHOT_FILES, name)) {
      return `it lists ${JSON.stringify(name)}, which is no file a snapshot holds (only ${Object.keys(SNAPSHOT_FILES).join(', ')}; never a path with .. or an absolute one)`
    }
    if (!isObject(entry) || !isCount(entry.bytes) || typeof entry.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(entry.sha256))
      return `the entry of ${name} is not a size and a SHA-256`
    const most = SNAPSHOT_FILES[name] as number
    if (entry.bytes > most) return `it says ${name} is ${entry.bytes} bytes; such a file is at most ${most}`
  }
  const main = m.store === 'sqlite' ? DATABASE_FILE : POSTGRES_DUMP
  if (!Object.hasOwn(m.files, main)) return `a ${m.store} snapshot lists ${main}, and this one does not`
  if (m.store === 'postgres' && Object.hasOwn(m.files, DATABASE_FILE)) return `a postgres snapshot holds no ${DATABASE_FILE}`
  return undefined
}

/** What a path in a snapshot is, without following a link; RestoreRefused naming it otherwise. */
function lstatIn(dir: string, relative: string, what: 'file' | 'folder'): Stats {
  const stat = lstatSync(join(dir, relative), { throwIfNoEntry: false })
  if (!stat) throw new RestoreRefused(`${dir} is damaged: ${relative} is missing`)
  const ok = what === 'file' ? stat.isFile() : stat.isDirectory()
  if (!ok) {
    const is = stat.isSymbolicLink() ? 'a symbolic link' : stat.isFile() ? 'a file' : stat.isDirectory() ? 'a folder' : 'a special file'
    throw new RestoreRefused(
      `${dir} is not a snapshot a restore trusts: ${relative} is ${is}, not a regular ${what} (a snapshot holds nothing else); nothing was written`,
    )
  }
  return stat
}

/** Reads the manifest: a regular file of at most MAX_MANIFEST bytes, through a descriptor that follows no link. */
function readManifestText(dir: string): string {
  const stat = lstatSync(join(dir, 'manifest.json'), { throwIfNoEntry: false })
  if (!stat) {
    throw new RestoreRefused(`${dir} is not a snapshot: it has no manifest.json (npm run backup writes folders named studio-backup-<time>)`)
  }
  lstatIn(dir, 'manifest.json', 'file')
  if (stat.size > MAX_MANIFEST) throw new RestoreRefused(`${dir}/manifest.json is ${stat.size} bytes: no manifest is larger than 1 MiB`)
  const fd = openSync(join(dir, 'manifest.json'), READ_NO_FOLLOW)
  try {
    const buffer = Buffer.alloc(MAX_MANIFEST + 1)
    let n = 0
    for (let got = -1; got !== 0 && n < buffer.length; n += got) got = readSync(fd, buffer, n, buffer.length - n, null)
    if (n > MAX_MANIFEST || !fstatSync(fd).isFile()) throw new RestoreRefused(`${dir}/manifest.json changed while it was read`)
    return buffer.subarray(0, n).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/**
 * The snapshot's folder (its real path) and manifest, refused when it is unfinished, not one, or
 * not one a restore trusts (see the top of this file). Nothing is written.
 */
export function readSnapshot(from: string): { dir: string; manifest: Manifest } {
  const named = resolve(basename(from) === 'manifest.json' ? dirname(from) : from)
  if (isPartial(basename(named))) {
    throw new RestoreRefused(`${named} is an unfinished snapshot (its writing was interrupted): restore a finished one`)
  }
  let dir: string
  try {
    dir = realpathSync(named)
  } catch {
    throw new RestoreRefused(`${named} is not a snapshot: there is no such folder`)
  }
  if (!lstatSync(dir).isDirectory()) throw new RestoreRefused(`${named} is not a snapshot: it is not a folder`)
  const text = readManifestText(dir)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new RestoreRefused(`${dir}/manifest.json is not JSON (${(err as Error).message}): the snapshot is damaged; nothing was written`)
  }
  const problem = manifestProblem(parsed)
  if (problem) {
    const format = isObject(parsed) && typeof parsed.format === 'string' && parsed.format !== SNAPSHOT_FORMAT ? parsed.format : undefined
    throw new RestoreRefused(
      format !== undefined
        ? `${dir} is not a snapshot this version reads (format ${JSON.stringify(format)})`
        : `${dir}/manifest.json is not a manifest this version writes: ${problem}; the snapshot is damaged or was tampered with, and nothing was written`,
    )
  }
  const manifest = parsed as Manifest
  const unknown = manifest.migrations.filter((name) => !migrationNames().includes(name))
  if (unknown.length > 0) {
    throw new RestoreRefused(
      `${dir} was written by a newer version of studio-api (its database has migration ${unknown.join(', ')}, which this version does not know): restore it with that version`,
    )
  }
  // Every listed file, before anything is written: a regular file of the size the manifest says.
  for (const [relative, { bytes }] of Object.entries(manifest.files)) {
    if (relative.includes('/')) lstatIn(dir, dirname(relative), 'folder')
    const stat = lstatIn(dir, relative, 'file')
    if (stat.size !== bytes) {
      throw new RestoreRefused(`${dir} is damaged: ${relative} is ${stat.size} bytes, and its manifest says ${bytes}; nothing was written`)
    }
  }
  return { dir, manifest }
}
