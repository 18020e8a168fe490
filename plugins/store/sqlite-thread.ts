// The worker thread behind ThreadedSqliteDialect (sqlite-thread-dialect.ts): one better-sqlite3
// connection to the data folder's database, running the statements the main thread sends it, so
// that a commit's fsync blocks this thread, not the event loop that serves requests. Same pragmas
// as the main connection (sqlite-connection.ts), same prepared-statement cache, and the same watch
// on the database's three files (watched.ts), checked where a commit can go wrong: before a
// transaction or a single write begins (nothing is written into a deleted log, and no other
// process's commits are overwritten through a replaced index), and again after each commit, before
// its answer goes back: a commit that went into a file deleted meanwhile is not acknowledged. Six
// stat() calls per commit, whatever its number of statements. One message in, one message out, in order.
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from 'better-sqlite3'
import { configureConnection } from './sqlite-connection.js'
import type { ThreadReply, ThreadRequest, ThreadSettings } from './sqlite-thread-dialect.js'
import { StorageLost } from './unavailable.js'
import { DatabaseFiles, StatementCache } from './watched.js'

const port = parentPort
if (!port) throw new Error('sqlite-thread.ts runs as a worker thread (ThreadedSqliteDialect starts it)')
const { file, unsafeNoFsync } = workerData as ThreadSettings
const post = (reply: ThreadReply) => port.postMessage(reply)
const failure = (err: unknown) => {
  const e = err as { message?: unknown; code?: unknown }
  return { message: String(e?.message ?? err), code: typeof e?.code === 'string' ? e.code : undefined }
}

let database: SQLite.Database
try {
  // The main connection created the file and switched it to WAL (a property of the file).
  database = new SQLite(file, { fileMustExist: true })
  configureConnection(database, unsafeNoFsync)
} catch (err) {
  post({ id: 0, error: failure(err) })
  process.exit(1)
}
const files = new DatabaseFiles(file)
const statements = new StatementCache(database)

/**
 * Whether the files are still the ones opened; found lost (once), the log is saved into the
 * database file if it can be and the main thread is told. `saved`: everything committed so far is
 * in the database file.
 */
function filesLost(): { reason: string; saved: boolean } | undefined {
  if (files.lost !== undefined) return { reason: files.lost, saved: false }
  const reason = files.check()
  if (reason === undefined) return undefined
  const { note, saved } = files.saveLog(database, 'FULL')
  post({ id: -1, lost: `${reason}${note}` })
  return { reason, saved }
}

post({ id: 0, ready: true })

/**
 * A batch (store/batch.ts): its statements between BEGIN IMMEDIATE and COMMIT, with the same
 * watch on the files as a transaction sent statement by statement; if one fails, none is kept.
 */
function runBatch(id: number, batch: readonly { sql: string; parameters: readonly unknown[] }[]): void {
  try {
    const before = filesLost()
    if (before) throw new StorageLost(before.reason)
    statements.prepare('begin immediate').run([])
    const results: { rows: Record<string, unknown>[]; changes: number }[] = []
    try {
      for (const { sql, parameters } of batch) {
        const statement = statements.prepare(sql)
        if (statement.reader) {
          const rows = statement.all(parameters) as Record<string, unknown>[]
          results.push({ rows, changes: rows.length })
        } else {
          results.push({ rows: [], changes: statement.run(parameters).changes })
        }
      }
      statements.prepare('commit').run([])
    } catch (err) {
      // SQLite may have rolled back already (some I/O errors); the first error is the one to tell.
      if (database.inTransaction) {
        try {
          statements.prepare('rollback').run([])
        } catch {}
      }
      throw err
    }
    const after = filesLost()
    if (after && !after.saved) throw new StorageLost(after.reason)
    post({ id, results })
  } catch (err) {
    post({ id, error: failure(err) })
  }
}

port.on('message', (request: ThreadRequest) => {
  if (request.close) {
    database.close()
    port.close()
    return
  }
  if (request.batch) {
    runBatch(request.id, request.batch)
    return
  }
  // SQLite may already have rolled the transaction back itself (some I/O errors, a full disk): the
  // rollback that follows then has nothing to do, and must not replace the error that caused it.
  if (request.sql === 'rollback' && !database.inTransaction) {
    post({ id: request.id, rows: [] })
    return
  }
  try {
    // Before a transaction or a single write: never write into lost files.
    if (!database.inTransaction) {
      const lost = filesLost()
      if (lost) throw new StorageLost(lost.reason)
    }
    // A transaction's BEGIN comes with its first statement: if it fails, the statement is not run.
    if (request.begin) statements.prepare('begin immediate').run([])
    const inTransaction = database.inTransaction
    const statement = statements.prepare(request.sql)
    let reply: ThreadReply
    if (statement.reader) {
      reply = { id: request.id, rows: statement.all(request.parameters) as Record<string, unknown>[] }
    } else {
      const { changes, lastInsertRowid } = statement.run(request.parameters)
      reply = { id: request.id, rows: [], changes: BigInt(changes), lastInsertRowid: BigInt(lastInsertRowid) }
    }
    // Committed (a COMMIT, or a single write): acknowledged only if it went into the files the
    // server reads at its next start, or was saved into the database file when its log went.
    if (!database.inTransaction && (inTransaction || !statement.readonly)) {
      const lost = filesLost()
      if (lost && !lost.saved) throw new StorageLost(lost.reason)
    }
    post(reply)
  } catch (err) {
    post({ id: request.id, error: failure(err) })
  }
})
