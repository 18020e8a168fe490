// Clearing erased bytes from the embedded database's files. Deleting a row is not enough:
//
// - secure_delete (sqlite-connection.ts, on every connection) zeroes a deleted row's cell, and
//   pages and overflow pages that become free, in the page that held it;
// - but SQLite copies cells between pages when it balances a b-tree (an insert that splits a
//   page, a delete that merges two), and the copy left behind in the old page's unused space is
//   not zeroed (btree.c rebuildPage): a lead moved once can survive its erasure there;
// - and in WAL mode every page written goes to the -wal file first, where the old versions of a
//   page stay (a checkpoint copies the newest into the database, it does not clear the log) until
//   they happen to be overwritten.
//
// So after an erasure: VACUUM (the database rebuilt page by page from its live rows, in memory,
// temp_store=MEMORY, then written over every page of the file, which shrinks to fit), then a
// TRUNCATE checkpoint (the WAL copied into the database and cut to zero bytes). The checkpoint
// cannot finish while a reader, in this process or another (the running server), still reads an
// older snapshot: it is retried until it does, never holding the write lock while it waits (the
// server's intake goes on; a clearing that readers hold up past its time is reported pending).
// The -shm file holds only the WAL's index (page numbers and checksums), never row data. PostgreSQL has no such step here: README says what to run.
import SQLite from 'better-sqlite3'
import { type Kysely, sql } from 'kysely'
import type { Database } from '../../plugins/store/schema.js'
import type { PrivacyRepository } from './repository.js'

export interface ScrubOptions {
  /** How long to keep retrying a checkpoint that readers hold up (default 60 s). */
  withinMs?: number
  now?: () => Date
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A TRUNCATE checkpoint, retried until no reader holds it up; true when the WAL is empty. On a
 * connection of its own with no busy handler: SQLite's TRUNCATE checkpoint takes the write lock and
 * then waits, through the busy handler, for every reader of the log to finish, holding the lock
 * all the while, so that with the store's 5 s busy timeout a long reader (a whole leads log being
 * streamed, a backup, another process) held every commit of the server back for 5 s at a time
 * (third audit, finding 7). Without one it takes the lock only if it is free, checkpoints what it
 * can, and gives the lock back at once when a reader is in the way; it tries again 100 ms later.
 */
export async function truncateWal(file: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs
  const connection = new SQLite(file, { fileMustExist: true })
  try {
    connection.pragma('busy_timeout = 0')
    for (;;) {
      const [row] = connection.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[]
      if (row?.busy === 0) return true
      if (Date.now() > deadline) return false
      await sleep(100)
    }
  } finally {
    connection.close()
  }
}

/** VACUUM, retried while another connection holds the write lock past the busy timeout. */
async function vacuum(db: Kysely<Database>, deadline: number): Promise<void> {
  for (;;) {
    try {
      await sql`vacuum`.execute(db)
      return
    } catch (err) {
      const code = (err as { code?: string }).code
      if ((code !== 'SQLITE_BUSY' && code !== 'SQLITE_LOCKED') || Date.now() > deadline) throw err
      await sleep(100)
    }
  }
}

export class ScrubIncomplete extends Error {}

/**
 * Clears the bytes of every erasure not yet cleared (SQLite), then records them as cleared. An
 * erasure whose process died before this is cleared by the next run (the server's hourly check,
 * or the next command). Throws ScrubIncomplete when readers held the WAL past `withinMs`: the
 * erasures stay to be cleared, the erased rows are gone either way.
 */
export async function scrub(db: Kysely<Database>, file: string, repo: PrivacyRepository, options: ScrubOptions = {}): Promise<number> {
  const withinMs = options.withinMs ?? 60_000
  const pending = await repo.unscrubbed()
  if (pending.length === 0) return 0
  await vacuum(db, Date.now() + withinMs)
  if (!(await truncateWal(file, withinMs))) {
    throw new ScrubIncomplete(
      `the write-ahead log stayed in use by a reader for ${Math.round(withinMs / 1000)} s (a long read, such as a whole leads log being streamed), so the erased bytes may still be in studio.db-wal; they are cleared at the next attempt (the server tries hourly, or run the command again)`,
    )
  }
  await repo.markScrubbed(pending, (options.now ?? (() => new Date()))().toISOString())
  // The record of it went to the WAL: checkpoint it too (a reader in the way is no harm now).
  await truncateWal(file, 0)
  return pending.length
}
