// The open SQLite file, watched: deleted or replaced under a running server, it is a ghost, and
// what is committed to it is gone at the next start.
import { statSync } from 'node:fs'
import type SQLite from 'better-sqlite3'
import type { SqliteDatabase } from 'kysely'
import { FifoMap } from 'toad-cache'
import { StorageLost } from './unavailable.js'

/**
 * The database, checking before each statement that `file` is still the file it has open (same
 * device and inode). Deleted or replaced, the open file is a ghost: what is committed to it is
 * gone at the next start. Every statement then fails as storage unavailable (503, /readyz not
 * ready), and `onLost` is told once. The check is one stat() per turn of the event loop that
 * runs statements. Statements are prepared once per SQL text (StatementCache).
 */
export function watchedDatabase(database: SQLite.Database, file: string, onLost: (reason: string) => void): SqliteDatabase {
  const opened = statSync(file)
  let lost: string | undefined
  // One stat() per turn of the event loop, not per statement: on the main thread a request's reads
  // run in one turn and share it. On the writer thread each statement arrives as a message of its
  // own, so each is checked, a transaction's COMMIT included.
  let checkedThisTurn = false
  const nextTurn = () => {
    checkedThisTurn = false
  }
  const check = () => {
    if (lost === undefined) {
      if (checkedThisTurn) return
      const now = statSync(file, { throwIfNoEntry: false })
      if (now?.ino === opened.ino && now.dev === opened.dev) {
        checkedThisTurn = true
        setImmediate(nextTurn)
        return
      }
      lost = `the database file ${file} was ${now ? 'replaced' : 'deleted'} while the server had it open`
      onLost(lost)
    }
    throw new StorageLost(lost)
  }
  const statements = new StatementCache(database)
  return {
    close: () => database.close(),
    prepare: (text: string) => {
      check()
      return statements.prepare(text)
    },
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
