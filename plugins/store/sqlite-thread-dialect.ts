// Kept for its figure (bench/README.md, "The ablation": `npm run bench -- --ablation=sqlite-thread`):
// getProjects during a lead flood on a disk whose fsync takes 2 ms longer (`readsDuringFlood`),
// where Kysely's own SqliteDialect on the main thread makes every request wait behind each
// commit's fsync. Where fsync is fast it buys little on the other figures.
//
// The Kysely dialect of the embedded SQLite store: reads on the main thread, writes on a worker.
//
// better-sqlite3 is synchronous. With synchronous=FULL a commit holds its thread for the whole
// fsync; on the main thread that is the event loop, and every request waits behind it. So the
// store has two connections to the file:
//
// - the main thread's (Kysely's own SQLite driver would use it alone) answers reads: a SELECT
//   outside a transaction runs at once, as before, and never waits for a lock (WAL);
// - a worker thread's (sqlite-thread.ts) runs everything else: every write and every
//   transaction, one at a time, the main thread sending each statement and awaiting its answer.
//   The commit's fsync blocks only the worker, while the event loop goes on reading, validating
//   and queueing the next group of leads.
//
// The main thread never writes, so it never waits for the write lock the worker holds (a
// synchronous wait there would also stall the worker's transaction, which needs the event loop
// to send its next statement). Transactions begin IMMEDIATE: the write lock is taken at BEGIN
// (waiting up to busy_timeout, as for another process), never half-way through.
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  type SqliteDatabase,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely'
import type { BatchResult } from './batch.js'
import { StorageLost } from './unavailable.js'

export interface ThreadSettings {
  file: string
  unsafeNoFsync: boolean
}
/**
 * `begin`: open the transaction (BEGIN IMMEDIATE) first; if that fails, the statement is not run.
 * `batch`: statements run as one transaction, in one message (store/batch.ts).
 */
export type ThreadRequest =
  | { id: number; sql: string; parameters: readonly unknown[]; begin?: boolean; batch?: undefined; close?: undefined }
  | { id: number; batch: readonly { sql: string; parameters: readonly unknown[] }[]; close?: undefined }
  | { close: true }
interface ThreadFailure {
  message: string
  code: string | undefined
}
export type ThreadReply =
  | { id: number; rows: Record<string, unknown>[]; changes?: bigint; lastInsertRowid?: bigint; error?: undefined }
  | { id: number; results: { rows: Record<string, unknown>[]; changes: number }[]; error?: undefined }
  | { id: number; error: ThreadFailure }
  | { id: 0; ready: true }
  | { id: -1; lost: string }

export interface ThreadedSqliteOptions extends ThreadSettings {
  /** The main thread's connection (watched.ts), for reads. */
  reader: SqliteDatabase
  /** Told when the worker finds the file deleted or replaced, or the worker itself stops. */
  onLost: (reason: string) => void
}

/**
 * The worker: the compiled sibling (dist/, or the bundle's own). Running from source (tests,
 * `npm run dev`), the TypeScript source, through tsx's loader registered in the worker itself: on
 * Node 20 a worker thread inherits neither the parent's loader nor an `--import` of one.
 */
function startThread(settings: ThreadSettings): Worker {
  // The thread only passes statements and rows: a small heap keeps its memory small.
  const resourceLimits = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: 64 }
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./sqlite-thread.js', import.meta.url), { workerData: settings, resourceLimits })
  }
  const tsx = import.meta.resolve('tsx/esm/api')
  const source = new URL('./sqlite-thread.ts', import.meta.url).href
  return new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(source)}) })`, {
    eval: true,
    workerData: settings,
    resourceLimits,
  })
}

/** An error from the worker as the main thread's code expects it: same message, same code. */
function rebuilt(failure: ThreadFailure): Error {
  if (failure.code === 'STORAGE_LOST') return new StorageLost(failure.message)
  return Object.assign(new Error(failure.message), failure.code === undefined ? {} : { code: failure.code })
}

export class ThreadedSqliteDialect implements Dialect {
  private driver: ThreadedSqliteDriver | undefined
  constructor(private readonly options: ThreadedSqliteOptions) {}
  createAdapter() {
    return new SqliteAdapter()
  }
  createDriver(): Driver {
    this.driver = new ThreadedSqliteDriver(this.options)
    return this.driver
  }
  /** Statements as one transaction in one message to the worker, in the writer's turn. */
  async batch(queries: readonly CompiledQuery[]): Promise<BatchResult[]> {
    if (!this.driver) throw new Error('the SQLite store is not open')
    return this.driver.batch(queries)
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler()
  }
  createIntrospector(db: Kysely<unknown>) {
    return new SqliteIntrospector(db)
  }
}

/** A mutex: one writer (a write or a whole transaction) at a time on the worker's connection. */
class Turn {
  private last: Promise<void> = Promise.resolve()
  async take(): Promise<() => void> {
    const previous = this.last
    let release!: () => void
    this.last = new Promise<void>((r) => {
      release = r
    })
    await previous
    return release
  }
}

/** What Kysely holds between acquiring and releasing: routes each statement to a thread. */
class RoutingConnection implements DatabaseConnection {
  /** Set while this connection runs a transaction: it holds the writer's turn. */
  release: (() => void) | undefined
  /**
   * The transaction has begun here but not yet on the worker: BEGIN goes with its first statement,
   * one round trip through the two event loops fewer per transaction.
   */
  beginPending = false

  constructor(private readonly driver: ThreadedSqliteDriver) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.release === undefined && SelectQueryNode.is(query.query)) return this.driver.read<R>(query)
    if (this.release !== undefined) {
      const begin = this.beginPending
      this.beginPending = false
      return this.driver.write<R>(query, begin)
    }
    const release = await this.driver.turn.take()
    try {
      return await this.driver.write<R>(query)
    } finally {
      release()
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.release !== undefined || !SelectQueryNode.is(query.query)) {
      throw new Error('only a SELECT outside a transaction can be streamed (on the main connection)')
    }
    for (const row of this.driver.reader.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] }
  }
}

class ThreadedSqliteDriver implements Driver {
  readonly reader: SqliteDatabase
  readonly turn = new Turn()
  private worker: Worker | undefined
  private readonly waiting = new Map<number, { resolve: (r: QueryResult<unknown> | BatchResult[]) => void; reject: (e: Error) => void }>()
  private nextId = 1
  /** Why the worker cannot answer any more, once it has stopped. */
  private stopped: string | undefined

  constructor(private readonly options: ThreadedSqliteOptions) {
    this.reader = options.reader
  }

  async init(): Promise<void> {
    const worker = startThread({ file: this.options.file, unsafeNoFsync: this.options.unsafeNoFsync })
    const [first] = (await once(worker, 'message')) as [ThreadReply]
    if ('error' in first && first.error) throw rebuilt(first.error)
    this.worker = worker
    worker.on('message', (reply: ThreadReply) => this.receive(reply))
    const stop = (reason: string) => {
      if (this.stopped !== undefined) return
      this.stopped = reason
      this.options.onLost(reason)
      for (const { reject } of this.waiting.values()) reject(new StorageLost(reason))
      this.waiting.clear()
    }
    worker.on('error', (err) => stop(`the SQLite writer thread failed: ${err.message}`))
    worker.on('exit', (code) => stop(`the SQLite writer thread stopped (exit code ${code})`))
  }

  read<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return Promise.resolve({ rows: this.reader.prepare(query.sql).all(query.parameters) as R[] })
    } catch (err) {
      return Promise.reject(err)
    }
  }

  write<R>(query: CompiledQuery, begin = false): Promise<QueryResult<R>> {
    return this.send({ sql: query.sql, parameters: query.parameters, ...(begin && { begin }) }) as Promise<QueryResult<R>>
  }

  async batch(queries: readonly CompiledQuery[]): Promise<BatchResult[]> {
    const release = await this.turn.take()
    try {
      const reply = await this.send({ batch: queries.map((q) => ({ sql: q.sql, parameters: q.parameters })) })
      return reply as unknown as BatchResult[]
    } finally {
      release()
    }
  }

  private send(
    request:
      | { sql: string; parameters: readonly unknown[]; begin?: boolean }
      | { batch: { sql: string; parameters: readonly unknown[] }[] },
  ): Promise<QueryResult<unknown> | BatchResult[]> {
    const worker = this.worker
    if (this.stopped !== undefined || !worker)
      return Promise.reject(new StorageLost(this.stopped ?? 'the SQLite writer thread is not running'))
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.postMessage({ id, ...request } satisfies ThreadRequest)
    })
  }

  private receive(reply: ThreadReply): void {
    if ('lost' in reply) {
      this.options.onLost(reply.lost)
      return
    }
    const waiter = this.waiting.get(reply.id)
    if (!waiter) return
    this.waiting.delete(reply.id)
    if ('error' in reply && reply.error) {
      waiter.reject(rebuilt(reply.error))
    } else if ('results' in reply) {
      waiter.resolve(reply.results.map((r) => ({ rows: r.rows, rowCount: r.changes })))
    } else if ('rows' in reply) {
      const { rows, changes, lastInsertRowid } = reply
      waiter.resolve({
        rows,
        ...(changes === undefined ? {} : { numAffectedRows: changes }),
        ...(lastInsertRowid === undefined ? {} : { insertId: lastInsertRowid }),
      })
    }
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return new RoutingConnection(this)
  }
  async releaseConnection(): Promise<void> {}

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const routed = connection as RoutingConnection
    routed.release = await this.turn.take()
    // BEGIN IMMEDIATE is sent with the first statement (RoutingConnection.executeQuery); a BEGIN
    // that fails (the write lock held past the busy timeout) fails that statement, which is not run.
    routed.beginPending = true
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const routed = connection as RoutingConnection
    // No statement ran: nothing was begun on the worker, nothing to commit.
    if (!routed.beginPending) {
      // A failed commit keeps the turn: Kysely rolls back next, and that rollback must still be ours.
      await this.write(CompiledQuery.raw('commit'))
    }
    this.endTurn(routed)
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const routed = connection as RoutingConnection
    try {
      if (!routed.beginPending) await this.write(CompiledQuery.raw('rollback'))
    } finally {
      this.endTurn(routed)
    }
  }
  private endTurn(connection: RoutingConnection): void {
    const release = connection.release
    connection.release = undefined
    connection.beginPending = false
    release?.()
  }

  async destroy(): Promise<void> {
    const worker = this.worker
    if (worker && this.stopped === undefined) {
      // Whatever holds the writer's turn finishes first.
      const release = await this.turn.take()
      this.stopped = 'the store is closed'
      const exited = once(worker, 'exit')
      worker.postMessage({ close: true } satisfies ThreadRequest)
      await exited
      release()
    }
    this.reader.close()
  }
}
