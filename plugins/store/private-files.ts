// The data folder holds personal data (leads), secret hashes, keys and credentials: it is the
// owner's alone, 0700, and every file in it 0600, whatever the umask and whatever mode an older
// version left behind. The modes are set explicitly after creating (a creation mode is only
// what the umask lets through, and an existing file keeps its mode).
import {
  chmodSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { userInfo } from 'node:os'
import { dirname, join } from 'node:path'
import { ConfigError } from '../../lib/settings.js'

const STICKY = 0o1000

/** A data file that is missing where it was expected, and that the caller may not create. */
export class MissingDataFile extends Error {}

/**
 * Creates a folder and its missing parents (mkdir -p), each with `mode`. Not mkdirSync's
 * `recursive`: where a file system answers ENOENT for a folder whose parent is there (/proc,
 * /sys), Node 20's loops forever, in native code, holding its thread: a server given
 * BACKUP_DIR=/proc/backups spun both cores, logged nothing, and ignored SIGTERM; DATA_DIR there,
 * and it never started. Here that ENOENT is thrown.
 */
export function makeDirs(dir: string, mode = 0o777): void {
  for (let attempt = 0; ; attempt++) {
    try {
      mkdirSync(dir, { mode })
      return
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'EEXIST' && statSync(dir).isDirectory()) return
      const parent = dirname(dir)
      // A second ENOENT, with the parent there by now: this file system makes no such folder.
      if (code !== 'ENOENT' || parent === dir || attempt > 0) throw err
      // Missing parents first (unless another process made them meanwhile), then once more.
      if (!existsSync(parent)) makeDirs(parent, mode)
    }
  }
}

/**
 * Creates the folder (and its parents) if missing and makes it 0700. A sticky folder (a shared
 * one such as /tmp) is left as it is: the files in it are still private, but the folder's
 * listing is not; `readableByOthers` tells the start-up to warn.
 */
export function privateDir(dir: string): void {
  makeDirs(dir, 0o700)
  const { mode } = statSync(dir)
  if ((mode & STICKY) === 0 && (mode & 0o777) !== 0o700) {
    try {
      chmodSync(dir, 0o700)
    } catch {
      // Not the owner's folder: left as it is; the start-up warns when others can read it.
    }
  }
}

/** Whether anyone but the owner may list or enter the folder (false when it does not exist). */
export function readableByOthers(dir: string): boolean {
  const stat = statSync(dir, { throwIfNoEntry: false })
  return stat !== undefined && (stat.mode & 0o077) !== 0
}

/** Makes an existing file 0600; a missing one is no error. */
export function privateFile(path: string): void {
  try {
    chmodSync(path, 0o600)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
}

/** Writes a file that only its owner may read (`flag: 'wx'` to fail if it exists). */
export function writePrivateFile(path: string, data: string, flag: 'w' | 'wx' = 'w'): void {
  writeFileSync(path, data, { mode: 0o600, flag })
  privateFile(path)
}

/** Creates an empty owner-only file if it does not exist yet. */
export function touchPrivateFile(path: string): void {
  closeSync(openSync(path, 'a', 0o600))
  privateFile(path)
}

/**
 * A data folder, or a file in it, that belongs to another user (see checkOwnership): a mistake in
 * the configuration (exit 78, EX_CONFIG), which a restart does not mend.
 */
export class ForeignOwner extends ConfigError {}

/** The name of a local user (from /etc/passwd), for messages; undefined when unknown. */
function userName(uid: number): string | undefined {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , id] = line.split(':')
      if (id === String(uid)) return name
    }
  } catch {
    // no /etc/passwd: numbers only
  }
  return undefined
}

const who = (uid: number): string => {
  const name = userName(uid)
  return name ? `${name} (uid ${uid})` : `uid ${uid}`
}

/**
 * The data folder must belong to the user the server runs as, and so must everything in it and
 * in its `keys/` (root's is accepted too: root can read and plant anything anyway), as sshd's
 * StrictModes demands of a user's keys: another user's folder may hold a signing key, a pepper,
 * a database or credentials that user planted or can read, and the server would mint tokens with
 * that key and trust that database without a word. Throws ForeignOwner naming the path, its
 * owner and the fix; a folder that does not exist yet is no error. Not checked where there are no
 * POSIX owners (Windows).
 */
export function checkOwnership(dataDir: string, runner = 'the server'): void {
  const me = process.geteuid?.()
  if (me === undefined) return
  const inside = (dir: string): string[] => {
    try {
      return readdirSync(dir).map((name) => join(dir, name))
    } catch {
      return []
    }
  }
  const keys = join(dataDir, 'keys')
  const paths = [dataDir, ...inside(dataDir), ...inside(keys)]
  // lstat: a symbolic link planted by another user is theirs, whatever it points to. And the
  // folders as they resolve: a link of one's own to another user's folder is that user's folder.
  const checks = [...paths.map((path) => [path, path] as const), [dataDir, realFolder(dataDir)] as const, [keys, realFolder(keys)] as const]
  for (const [path, resolved] of checks) {
    if (resolved === undefined) continue
    const stat = notThere(() =>
      resolved === path ? lstatSync(path, { throwIfNoEntry: false }) : statSync(resolved, { throwIfNoEntry: false }),
    )
    if (stat === undefined || stat.uid === me || stat.uid === 0) continue
    const shown = resolved === path ? path : `${path} (${resolved}, where it leads)`
    const myName = userName(me) ?? userInfo().username
    throw new ForeignOwner(
      `${shown} belongs to ${who(stat.uid)}, not to ${who(me)} that runs ${runner}: another user could have planted a signing key, a pepper or a database there (or read them), so the data folder is not used. ` +
        `Give it to the server's user (chown -R ${myName || me} ${dataDir}) if it is yours, or set DATA_DIR to a folder of the server's own.`,
    )
  }
}

/** The real path of a folder that exists (links resolved), else undefined. */
function realFolder(path: string): string | undefined {
  try {
    return realpathSync(path)
  } catch {
    return undefined
  }
}

/** What `read` returns; undefined where a file in the path is no folder (ENOTDIR: nothing is there either). */
function notThere<T>(read: () => T): T | undefined {
  try {
    return read()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined
    throw err
  }
}
