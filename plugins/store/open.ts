// Opens the storage the configuration names and brings its schema up to date.
// The embedded default is a SQLite file in the data folder (WAL, fsync on every commit).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely'
import type { Config } from '../../config.js'
import { CatalogueRepository } from './catalogue.js'
import { ClientsRepository } from './clients.js'
import { LeadsRepository } from './leads.js'
import { type Dialect, migrateToLatest } from './migrations.js'
import type { Database } from './schema.js'

export interface Store {
  readonly dialect: Dialect
  /** Where the data lives, for logs (never a password). */
  readonly location: string
  readonly db: Kysely<Database>
  readonly leads: LeadsRepository
  readonly clients: ClientsRepository
  readonly catalogue: CatalogueRepository
  /** Resolves when storage answers a trivial query. */
  ping(): Promise<void>
  close(): Promise<void>
}

function openSqlite(dataDir: string): { db: Kysely<Database>; location: string } {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const file = join(dataDir, 'studio.db')
  const database = new SQLite(file)
  // Wait for other processes' locks (first, so switching to WAL waits too). WAL lets readers (the
  // CLI, the log) run beside the writer; synchronous=FULL makes every commit fsync before it
  // returns, so an acknowledged lead survives a crash or power loss.
  database.pragma('busy_timeout = 5000')
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.pragma('foreign_keys = ON')
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), location: file }
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
): Promise<{ db: Kysely<Database>; location: string }> {
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
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), location: describeUrl(url) }
}

export interface OpenOptions {
  /** Called when an idle pooled connection fails (PostgreSQL); the pool replaces it. */
  onPoolError?: (err: Error) => void
}

export async function openStore(config: Pick<Config, 'dataDir' | 'databaseUrl' | 'dbPoolMax'>, options: OpenOptions = {}): Promise<Store> {
  const dialect: Dialect = config.databaseUrl ? 'postgres' : 'sqlite'
  const { db, location } = config.databaseUrl
    ? await openPostgres(config.databaseUrl, config.dbPoolMax, options.onPoolError ?? (() => {}))
    : openSqlite(config.dataDir)
  try {
    const migrate = () => migrateToLatest(db as Kysely<unknown>, dialect)
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
    leads: new LeadsRepository(db),
    clients: new ClientsRepository(db),
    catalogue: new CatalogueRepository(db),
    async ping() {
      await sql`select 1`.execute(db)
    },
    async close() {
      await db.destroy()
    },
  }
}
