// Opens the storage the configuration names and brings its schema up to date.
// The embedded default is a SQLite file in the data folder (WAL, fsync on every commit).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
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
  // WAL lets readers (the CLI, the log) run beside the writer; synchronous=FULL makes every
  // commit fsync before it returns, so an acknowledged lead survives a crash or power loss.
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  database.pragma('busy_timeout = 5000')
  database.pragma('foreign_keys = ON')
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }), location: file }
}

export async function openStore(config: Pick<Config, 'dataDir'>): Promise<Store> {
  const dialect: Dialect = 'sqlite'
  const { db, location } = openSqlite(config.dataDir)
  try {
    await migrateToLatest(db as Kysely<unknown>, dialect)
  } catch (err) {
    await db.destroy()
    throw err
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
