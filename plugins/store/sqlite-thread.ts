// The worker thread behind ThreadedSqliteDialect (sqlite-thread-dialect.ts): one better-sqlite3
// connection to the data folder's database, running the statements the main thread sends it, so
// that a commit's fsync blocks this thread, not the event loop that serves requests. Same pragmas
// as the main connection (sqlite-connection.ts), same watch on the file (watched.ts), same prepared-statement
// cache. One message in, one message out, in order.
import { parentPort, workerData } from 'node:worker_threads'
import SQLite from 'better-sqlite3'
import { configureConnection } from './sqlite-connection.js'
import type { ThreadReply, ThreadRequest, ThreadSettings } from './sqlite-thread-dialect.js'
import { watchedDatabase } from './watched.js'

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
const db = watchedDatabase(database, file, (reason) => post({ id: -1, lost: reason }))
post({ id: 0, ready: true })

port.on('message', (request: ThreadRequest) => {
  if (request.close) {
    database.close()
    port.close()
    return
  }
  // SQLite may already have rolled the transaction back itself (some I/O errors, a full disk): the
  // rollback that follows then has nothing to do, and must not replace the error that caused it.
  if (request.sql === 'rollback' && !database.inTransaction) {
    post({ id: request.id, rows: [] })
    return
  }
  try {
    // A transaction's BEGIN comes with its first statement: if it fails, the statement is not run.
    if (request.begin) db.prepare('begin immediate').run([])
    const statement = db.prepare(request.sql)
    if (statement.reader) {
      post({ id: request.id, rows: statement.all(request.parameters) as Record<string, unknown>[] })
    } else {
      const { changes, lastInsertRowid } = statement.run(request.parameters)
      post({ id: request.id, rows: [], changes: BigInt(changes), lastInsertRowid: BigInt(lastInsertRowid) })
    }
  } catch (err) {
    post({ id: request.id, error: failure(err) })
  }
})
