// The data folder holds personal data (leads), secret hashes, keys and credentials: it is the
// owner's alone, 0700, and every file in it 0600, whatever the umask and whatever mode an older
// version left behind. The modes are set explicitly after creating (a creation mode is only
// what the umask lets through, and an existing file keeps its mode).
import { chmodSync, closeSync, mkdirSync, openSync, statSync, writeFileSync } from 'node:fs'

const STICKY = 0o1000

/** A data file that is missing where it was expected, and that the caller may not create. */
export class MissingDataFile extends Error {}

/**
 * Creates the folder (and its parents) if missing and makes it 0700. A sticky folder (a shared
 * one such as /tmp) is left as it is: the files in it are still private, but the folder's
 * listing is not; `readableByOthers` tells the start-up to warn.
 */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 })
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
