// Versioned migrations, the same on every backend. Kysely's Migrator keeps the applied list; on
// PostgreSQL it also takes a lock, so several instances starting together migrate once. On SQLite
// it takes none: open.ts runs one file's migrations one at a time instead.

import { type DatabaseIntrospector, type Kysely, type Migration, type MigrationProvider, Migrator, sql } from 'kysely'
import { MIGRATIONS } from './migrations/index.js'

export type Dialect = 'sqlite' | 'postgres'

function migrations(dialect: Dialect): Record<string, Migration> {
  return Object.fromEntries(Object.entries(MIGRATIONS).map(([name, make]) => [name, make(dialect)]))
}

/** Kysely's Migrator over these migrations. */
export async function migrator(db: Kysely<unknown>, dialect: Dialect): Promise<Migrator> {
  const provider: MigrationProvider = { getMigrations: async () => migrations(dialect) }
  if (dialect !== 'postgres') return new Migrator({ db, provider })
  // On PostgreSQL the Migrator finds its own tables through db.introspection, which reads every
  // table of every schema in the database and calls functions on each schema's name: a schema
  // that another application (or a test) drops during that query fails it with
  // `invalid_schema_name` (CI saw it: "schema t_… does not exist", a schema not ours). Pin the
  // Migrator to ours (the connection's search_path) and let it look there only.
  const schema = (await sql<{ schema: string | null }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
  if (!schema) return new Migrator({ db, provider })
  return new Migrator({ db: withIntrospectionOf(db, schema), provider, migrationTableSchema: schema })
}

/**
 * The same Kysely, whose introspection sees one schema: its name among the schemas, its tables
 * (names only: all the Migrator asks of them). Everything else is the Kysely itself.
 */
function withIntrospectionOf(db: Kysely<unknown>, schema: string): Kysely<unknown> {
  const introspection: DatabaseIntrospector = {
    async getSchemas() {
      const { rows } = await sql<{ name: string }>`
        select nspname as name from pg_catalog.pg_namespace where nspname = ${schema}`.execute(db)
      return rows
    },
    async getTables() {
      const { rows } = await sql<{ name: string; kind: string }>`
        select c.relname as name, c.relkind as kind
        from pg_catalog.pg_class c join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
        where ns.nspname = ${schema} and c.relkind in ('r', 'v', 'p')`.execute(db)
      return rows.map((r) => ({ name: r.name, schema, isView: r.kind === 'v', columns: [] }))
    },
    async getMetadata() {
      return { tables: await this.getTables() }
    },
  }
  return new Proxy(db, {
    get(target, key) {
      if (key === 'introspection') return introspection
      const value = Reflect.get(target, key, target)
      // Kysely's methods use private fields: they run on the Kysely, not on this proxy.
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  const { error, results } = await (await migrator(db, dialect)).migrateToLatest()
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown'
    throw new Error(`Database migration ${failed} failed: ${(error as Error).message ?? String(error)}`)
  }
}

/** The names of the migrations this version knows (a restore refuses a database that has others). */
export const migrationNames = (): string[] => Object.keys(migrations('sqlite'))
