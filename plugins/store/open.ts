// Opens the storage the configuration names and brings its schema up to date. The store is the
// connection only: each feature builds its repositories over `store.db`.
// The embedded default is a SQLite file in the data folder (WAL, fsync on every commit), owner
// only (private-files.ts), and watched (watched.ts): if the file, its -wal or its -shm is deleted
// or replaced while it is open, every statement fails instead of writing into a file nobody will
// ever read again.
// Reads run on the main thread, writes on a worker thread, so that no commit's fsync holds the
// event loop (sqlite-thread-dialect.ts).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, sql } from 'kysely'
import { type Config, ConfigError } from '../../config.js'
import { type Batches, postgresBatch, postgresValues, sqliteValues } from './batch.js'
import { serverRunning } from './in-use.js'
import { type Dialect, migrateToLatest, migrator } from './migrations.js'
import { MissingDataFile, privateDir, privateFile, touchPrivateFile } from './private-files.js'
import type { Database } from './schema.js'
import { configureConnection } from './sqlite-connection.js'
import { ThreadedSqliteDialect } from './sqlite-thread-dialect.js'
import { watchedDatabase } from './watched.js'

export interface Store extends Batches {
  readonly dialect: Dialect
  /** Where the data lives, for logs (never a password). */
  readonly location: string
  readonly db: Kysely<Database>
  /** Resolves when storage answers a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** The database file of a data folder. */
export const sqliteFile = (dataDir: string): string => join(dataDir, 'studio.db')

/** The data folder, made (0700) if missing; one that cannot be is a configuration error that says which. */
function dataFolder(dataDir: string): void {
  try {
    privateDir(dataDir)
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException
    if (code === undefined) throw err
    throw new ConfigError(
      `DATA_DIR ${dataDir} cannot be made or used as the data folder (${message}): give a folder on a disk that this user may create and write`,
    )
  }
}

function openSqlite(
  dataDir: string,
  { create, onLost, unsafeNoFsync }: { create: boolean; onLost: (reason: string) => void; unsafeNoFsync: boolean },
): { db: Kysely<Database>; location: string } & Batches {
  const file = sqliteFile(dataDir)
  const exists = existsSync(file)
  if (!exists && !create) {
    throw new MissingDataFile(
      `there is no database at ${file}: a server started with this DATA_DIR creates it, so this folder is not the one the server uses (or it was deleted)`,
    )
  }
  dataFolder(dataDir)
  // Created empty and owner-only before SQLite opens it: SQLite gives its -wal and -shm files the
  // database file's mode.
  if (!exists) touchPrivateFile(file)
  refuseLostLog(dataDir)
  const database = new SQLite(file)
  // Its busy timeout first, so switching to WAL waits for other processes too. WAL lets readers
  // (this connection, the CLI) run beside the writer; it is a property of the file, so the writer
  // thread's connection finds it set.
  configureConnection(database, unsafeNoFsync)
  switchToWal(database)
  // A first read opens the write-ahead log and its index (-wal, -shm), so that the watch below
  // knows all three files as they are now.
  database.prepare('select count(*) from sqlite_master').get()
  // Files an older version created with the umask's mode.
  for (const path of [file, `${file}-wal`, `${file}-shm`]) privateFile(path)
  // Both connections (this one reads; the writer thread's writes) watch the files: whichever sees
  // one gone first tells, and the reader then refuses too (/readyz fails).
  let told = false
  const lostOnce = (reason: string) => {
    reader.markLost(reason)
    if (told) return
    told = true
    onLost(reason)
  }
  const reader = watchedDatabase(database, file, lostOnce)
  const dialect = new ThreadedSqliteDialect({ reader, file, unsafeNoFsync, onLost: lostOnce })
  const db = new Kysely<Database>({ dialect })
  return {
    db,
    location: file,
    values: sqliteValues,
    batch: (statements) => dialect.batch(statements.map((statement) => statement.compile(db))),
  }
}

/**
 * A running server always has the -wal and -shm open: missing, they were deleted under it, and a
 * new connection would build a new index over its log, the two then overwriting each other's
 * commits. Refused, with what to do.
 */
export function refuseLostLog(dataDir: string): void {
  const file = sqliteFile(dataDir)
  const gone = [`${file}-wal`, `${file}-shm`].filter((path) => !existsSync(path))
  if (gone.length > 0 && serverRunning(dataDir)) {
    throw new Error(
      `${gone.join(' and ')} ${gone.length > 1 ? 'are' : 'is'} missing while a server is using ${dataDir}: deleted under it, so nothing is written here now; stop that server (it refuses every write already) and start it again`,
    )
  }
}

/**
 * Switching a file to WAL needs a moment alone with it, and SQLite answers SQLITE_BUSY at once,
 * without its busy handler, while another process opens or switches the same new file (instances
 * starting together). The switch is retried for up to the busy timeout; WAL then stays on the file.
 */
function switchToWal(database: SQLite.Database): void {
  const deadline = Date.now() + 5000
  for (;;) {
    try {
      database.pragma('journal_mode = WAL')
      return
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20)
    }
  }
}

/**
 * Kysely takes no migration lock on SQLite, so two instances starting on a fresh file would both
 * migrate. Migrations of one file therefore run one at a time: within this process (a promise
 * chain) and across processes (an exclusive transaction on a side file; the others wait for it).
 */
const sqliteMigrations = new Map<string, Promise<unknown>>()

function oneMigrationAtATime<T>(file: string, migrate: () => Promise<T>): Promise<T> {
  const previous = sqliteMigrations.get(file) ?? Promise.resolve()
  const mine = previous
    .catch(() => {})
    .then(async () => {
      touchPrivateFile(`${file}-migrate-lock`)
      const lock = new SQLite(`${file}-migrate-lock`)
      try {
        lock.pragma('busy_timeout = 30000')
        lock.exec('BEGIN EXCLUSIVE')
        try {
          return await migrate()
        } finally {
          lock.exec('COMMIT')
        }
      } finally {
        lock.close()
      }
    })
  sqliteMigrations.set(file, mine)
  return mine
}

/** host:port/database of a PostgreSQL URL, for logs and messages (never the password). */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url)
    return `postgres://${u.hostname}:${u.port || 5432}${u.pathname}`
  } catch {
    return 'postgres://(unreadable URL)'
  }
}

async function openPostgres(
  url: string,
  poolMax: number,
  onPoolError: (err: Error) => void,
): Promise<{ db: Kysely<Database>; location: string } & Batches> {
  // Loaded only when PostgreSQL is configured: the embedded default starts without it.
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString: url,
    max: poolMax,
    connectionTimeoutMillis: 3000,
    idleTimeoutMillis: 30_000,
    // A statement that hangs (e.g. the server stops mid-query) fails instead of holding a request.
    query_timeout: 15_000,
    application_name: 'studio-api',
  })
  // A connection the server drops emits 'error': on the pool while idle, on the client while
  // checked out (a query in flight then fails and becomes a 503). Without these listeners the
  // process would die of an unhandled 'error' event.
  pool.on('error', onPoolError)
  pool.on('connect', (client) => {
    client.on('error', onPoolError)
  })
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  return {
    db,
    location: describeUrl(url),
    values: postgresValues,
    batch: postgresBatch(db, () => pool.connect(), pg.escapeLiteral),
  }
}

export interface OpenOptions {
  /** Benchmark only: SQLite commits without fsync (synchronous=OFF). */
  unsafeNoFsync?: boolean
  /** Called when an idle pooled connection fails (PostgreSQL); the pool replaces it. */
  onPoolError?: (err: Error) => void
  /**
   * Create the SQLite database when it does not exist (default true: the server). The CLIs pass
   * false: a missing file means a wrong or deleted data folder, and a database they created
   * would be one the server never reads.
   */
  create?: boolean
  /** Called once when the SQLite file is found deleted or replaced while open. */
  onLost?: (reason: string) => void
  /**
   * Called before migrations are applied to an existing database (one with migrations applied
   * already, not a new one), with the names of those about to run; on SQLite inside the
   * migration lock, so one process calls it. The start-up's snapshot (features/backup); if it
   * throws, nothing is migrated.
   */
  beforeMigrating?: (pending: string[], dialect: Dialect) => Promise<void>
}

type StoreConfig = Pick<Config, 'dataDir' | 'databaseUrl' | 'dbPoolMax'>

/** The connection the configuration names, its schema as it is (openStore migrates it). */
export async function connect(
  config: StoreConfig,
  options: OpenOptions = {},
): Promise<{ db: Kysely<Database>; location: string; dialect: Dialect } & Batches> {
  const dialect: Dialect = config.databaseUrl ? 'postgres' : 'sqlite'
  const opened = config.databaseUrl
    ? await openPostgres(config.databaseUrl, config.dbPoolMax, options.onPoolError ?? (() => {}))
    : openSqlite(config.dataDir, {
        create: options.create ?? true,
        onLost: options.onLost ?? (() => {}),
        unsafeNoFsync: options.unsafeNoFsync === true,
      })
  return { ...opened, dialect }
}

export async function openStore(config: StoreConfig, options: OpenOptions = {}): Promise<Store> {
  const { db, location, dialect, values, batch } = await connect(config, options)
  try {
    const migrate = async () => {
      if (options.beforeMigrating) {
        const known = await (await migrator(db as Kysely<unknown>, dialect)).getMigrations()
        const pending = known.filter((m) => m.executedAt === undefined).map((m) => m.name)
        if (pending.length > 0 && pending.length < known.length) await options.beforeMigrating(pending, dialect)
      }
      return migrateToLatest(db as Kysely<unknown>, dialect)
    }
    await (dialect === 'sqlite' ? oneMigrationAtATime(location, migrate) : migrate())
  } catch (err) {
    await db.destroy()
    const reason = (err as Error).message || String((err as { code?: string }).code ?? err)
    throw new Error(`Cannot open storage at ${location}: ${reason}`)
  }
  return {
    dialect,
    location,
    db,
    values,
    batch,
    async ping() {
      await sql`select 1`.execute(db)
    },
    async close() {
      await db.destroy()
    },
  }
}
