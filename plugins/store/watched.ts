// The open SQLite database, watched: its three files (the database, its write-ahead log `-wal`
// and the log's index `-shm`) deleted or replaced under a running server make it a ghost. A
// commit into a deleted -wal is gone at the next start; with -shm deleted, the next process to
// open the file builds a new index and the two overwrite each other's commits. So once any of the
// three is not the file that was opened (same device and inode), every statement fails as storage
// unavailable (503, /readyz not ready), `onLost` is told once, and, when the database file itself
// is still the one opened, the log's committed pages are first copied into it (a checkpoint reads
// the log through the handle SQLite still holds), so what was acknowledged before survives.
import { statSync } from 'node:fs'
import type SQLite from 'better-sqlite3'
import type { SqliteDatabase } from 'kysely'
import { FifoMap } from 'toad-cache'
import { StorageLost } from './unavailable.js'

interface Opened {
  path: string
  /** How the file is named in the log line. */
  what: string
  dev: number
  ino: number
}

/**
 * The database's three files as they were when opened. The -wal and -shm exist once the file is
 * in WAL mode and a connection has read from it (open.ts makes sure of both before this is made).
 */
export class DatabaseFiles {
  private readonly opened: Opened[]
  private reason: string | undefined
  /** Whether the database file itself is the one opened (the log can then be saved into it). */
  private databaseIntact = true

  constructor(readonly file: string) {
    this.opened = [
      [file, 'the database file'],
      [`${file}-wal`, "the database's write-ahead log"],
      [`${file}-shm`, "the database's write-ahead log index"],
    ].map(([path = '', what = '']) => {
      const { dev, ino } = statSync(path)
      return { path, what, dev, ino }
    })
  }

  /** Why the files are lost, once they are (it stays so). */
  get lost(): string | undefined {
    return this.reason
  }

  /** Stats the three files (three stat() calls); the reason when one is gone or replaced. */
  check(): string | undefined {
    if (this.reason !== undefined) return this.reason
    for (const [i, f] of this.opened.entries()) {
      const now = statSync(f.path, { throwIfNoEntry: false })
      if (now?.ino === f.ino && now.dev === f.dev) continue
      this.databaseIntact = i !== 0
      this.reason = `${f.what} ${f.path} was ${now ? 'replaced' : 'deleted'} while the server had it open`
      return this.reason
    }
    return undefined
  }

  /** Lost as another connection to the same file found (the main thread's reader, told by the writer thread). */
  markLost(reason: string): void {
    this.reason ??= reason
  }

  /**
   * Copies the log's committed pages into the database file, when that file is still the one
   * opened (its -wal or -shm went): `FULL` waits (busy timeout) for readers and writers, `PASSIVE`
   * copies what it can at once. Returns what the log line should add, and whether everything
   * committed is now in the database file (fsynced by the checkpoint, synchronous=FULL).
   */
  saveLog(database: SQLite.Database, mode: 'FULL' | 'PASSIVE'): { note: string; saved: boolean } {
    if (!this.databaseIntact) return { note: '', saved: false }
    try {
      const [row] = database.pragma(`wal_checkpoint(${mode})`) as { busy: number; log: number; checkpointed: number }[]
      const saved = row !== undefined && row.busy === 0 && row.checkpointed === row.log
      return {
        note: saved
          ? `; the ${row.log} pages it held were copied into ${this.file} first`
          : `; ${row?.checkpointed ?? 0} of its ${row?.log ?? '?'} pages were copied into ${this.file}`,
        saved,
      }
    } catch (err) {
      return { note: `; copying its pages into ${this.file} failed (${(err as Error).message})`, saved: false }
    }
  }
}

/**
 * The main thread's connection (reads), checking its files before each statement: three stat()
 * calls per turn of the event loop that runs statements, not per statement (a request's reads run
 * in one turn and share it). Found lost, the log is saved if it can be (PASSIVE: never waits for
 * the writer thread, which needs this event loop), `onLost` is told, and every statement fails.
 * Statements are prepared once per SQL text (StatementCache).
 */
export function watchedDatabase(
  database: SQLite.Database,
  file: string,
  onLost: (reason: string) => void,
): SqliteDatabase & { markLost(reason: string): void } {
  const files = new DatabaseFiles(file)
  let checkedThisTurn = false
  const nextTurn = () => {
    checkedThisTurn = false
  }
  const check = () => {
    if (files.lost === undefined) {
      if (checkedThisTurn) return
      const reason = files.check()
      if (reason === undefined) {
        checkedThisTurn = true
        setImmediate(nextTurn)
        return
      }
      onLost(`${reason}${files.saveLog(database, 'PASSIVE').note}`)
    }
    throw new StorageLost(files.lost ?? 'storage lost')
  }
  const statements = new StatementCache(database)
  return {
    close: () => database.close(),
    prepare: (text: string) => {
      check()
      return statements.prepare(text)
    },
    markLost: (reason: string) => files.markLost(reason),
  }
}

/** How many prepared statements are kept (the server's queries are a few dozen texts). */
const MAX_STATEMENTS = 256

/**
 * Statements prepared once per SQL text and reused: Kysely's SQLite driver asks for a new one for
 * every query, and preparing (parsing and planning the SQL) costs more than running most of ours.
 * A statement an open iterator is still reading (a streamed leads log) is busy: a second query of
 * the same text gets a statement of its own, not kept.
 */
export class StatementCache {
  /** First in, first out: the oldest text goes first when full. */
  private readonly kept = new FifoMap<SQLite.Statement>(MAX_STATEMENTS)

  constructor(private readonly database: SQLite.Database) {}

  prepare(text: string): SQLite.Statement {
    const kept = this.kept.get(text)
    if (kept !== undefined) return kept.busy ? this.database.prepare(text) : kept
    const statement = this.database.prepare(text)
    this.kept.set(text, statement)
    return statement
  }

  get size(): number {
    return this.kept.size
  }
}
