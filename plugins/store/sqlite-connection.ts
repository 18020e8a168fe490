// The settings of every connection to the data folder's SQLite file: the main thread's (open.ts)
// and the writer thread's (sqlite-thread.ts).
import type SQLite from 'better-sqlite3'

/**
 * Wait up to 5 s for other connections' locks (set first, so that what follows waits too);
 * synchronous=FULL makes every commit fsync before it returns, so an acknowledged lead survives a
 * crash or power loss (OFF only for the bench's fsync-off run); foreign keys enforced; SQLite's
 * temporary files (the statement journal a multi-row INSERT inside a transaction needs) in memory:
 * on disk, each group commit created, wrote and deleted one in /var/tmp. secure_delete: what a
 * statement deletes (a row's cell, a freed page, an overflow page) is overwritten with zeros
 * instead of lingering in free space; an erased lead's bytes are then gone from every page that
 * held it (features/privacy/scrub.ts clears the copies secure_delete cannot reach). Both
 * connections need it: it is a property of the connection, not of the file.
 */
export function configureConnection(database: SQLite.Database, unsafeNoFsync: boolean): void {
  database.pragma('busy_timeout = 5000')
  database.pragma(unsafeNoFsync ? 'synchronous = OFF' : 'synchronous = FULL')
  database.pragma('foreign_keys = ON')
  database.pragma('temp_store = MEMORY')
  database.pragma('secure_delete = ON')
}
