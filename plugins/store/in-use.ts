// Whether a server is using a data folder, known across processes: every server on the embedded
// store holds a shared lock on `DATA_DIR/server.lock` for as long as it runs (instances of one
// cluster share it), and asking tries for the exclusive lock without waiting. The lock is
// SQLite's own (POSIX advisory locks on an empty database file, as the migration lock in open.ts),
// so it needs nothing native beyond better-sqlite3, and the kernel drops it when the process
// dies, kill -9 included: no stale lock file to clean up. Restore asks before it touches a folder.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { touchPrivateFile } from './private-files.js'

export const serverLockFile = (dataDir: string): string => join(dataDir, 'server.lock')

/** Takes the shared lock until `release()` (waits out someone asking, a moment at most). */
export function holdServerLock(dataDir: string): { release(): void } {
  const file = serverLockFile(dataDir)
  touchPrivateFile(file)
  const lock = new SQLite(file)
  try {
    lock.pragma('busy_timeout = 5000')
    // An open read transaction keeps SQLite's SHARED lock on the file.
    lock.exec('begin')
    lock.prepare('select count(*) from sqlite_master').get()
  } catch (err) {
    lock.close()
    throw err
  }
  return {
    release: () => {
      if (lock.open) lock.close()
    },
  }
}

/** Whether a server (in this process or another) holds the data folder's lock now. */
export function serverRunning(dataDir: string): boolean {
  const file = serverLockFile(dataDir)
  if (!existsSync(file)) return false
  const probe = new SQLite(file, { fileMustExist: true })
  try {
    probe.pragma('busy_timeout = 0')
    try {
      probe.exec('begin exclusive')
    } catch (err) {
      if ((err as { code?: string }).code === 'SQLITE_BUSY') return true
      throw err
    }
    probe.exec('rollback')
    return false
  } finally {
    probe.close()
  }
}
