// Snapshots of a PostgreSQL store, by PostgreSQL's own tools: `pg_dump` (custom format) of the
// connection's schema, and `pg_restore` into an empty database. The dump is consistent with the
// counts and migrations the manifest records: both read one exported snapshot
// (`pg_export_snapshot()`, then `pg_dump --snapshot`). The password never appears on a command
// line (it goes to the tools as PGPASSWORD).
import { execFile } from 'node:child_process'
import { accessSync, constants, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import type pg from 'pg'
import { privateFile } from '../../plugins/store/private-files.js'
import { checksum, fsyncPath } from './files.js'
import type { DatabasePart, Manifest } from './snapshot.js'

const run = promisify(execFile)

export const POSTGRES_DUMP = 'database.pgdump'

/** The path of a program on PATH, or undefined. */
export function onPath(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue
    const file = join(dir, cmd)
    try {
      accessSync(file, constants.X_OK)
      if (statSync(file).isFile()) return file
    } catch {
      // not here
    }
  }
  return undefined
}

/** What to do instead when PostgreSQL's tools are not installed here. */
export const POSTGRES_ADVICE =
  'back the database up with PostgreSQL\'s own tools: pg_dump --format=custom "$DATABASE_URL" > studio.pgdump ' +
  "(or pg_basebackup / your provider's snapshots for the whole cluster), and keep JWT_PRIVATE_KEY and SECRET_PEPPER " +
  'with it (in a secrets manager): without them restored clients cannot authenticate and issued tokens do not verify'

function tool(name: 'pg_dump' | 'pg_restore'): string {
  const path = onPath(name)
  if (!path) throw new Error(`${name} is not installed here (Debian: apt-get install postgresql-client); otherwise ${POSTGRES_ADVICE}`)
  return path
}

/** The URL without its password, and the password for the tools' environment. */
function libpq(url: string): { dbname: string; env: NodeJS.ProcessEnv } {
  const u = new URL(url)
  const password = decodeURIComponent(u.password)
  u.password = ''
  return { dbname: u.toString(), env: { ...process.env, ...(password && { PGPASSWORD: password }) } }
}

async function connect(url: string): Promise<pg.Client> {
  const { default: pgModule } = await import('pg')
  const client = new pgModule.Client({ connectionString: url, application_name: 'studio-api backup' })
  await client.connect()
  return client
}

/** Counts and migrations of the schema, as the connection's transaction sees it. */
async function describe(client: pg.Client, schema: string): Promise<{ migrations: string[]; counts: Record<string, number> }> {
  const tables = new Set(
    (
      await client.query<{ name: string }>('select table_name as name from information_schema.tables where table_schema = $1', [schema])
    ).rows.map((r) => r.name),
  )
  const counts: Record<string, number> = {}
  const count = async (key: string, table: string, where = '') => {
    if (tables.has(table)) counts[key] = Number((await client.query(`select count(*) as n from ${table} ${where}`)).rows[0].n)
  }
  await count('leads', 'leads')
  await count('clients', 'clients')
  await count('webhook_endpoints', 'webhook_endpoints')
  await count('pending_deliveries', 'webhook_deliveries', `where status = 'pending'`)
  const migrations = tables.has('kysely_migration')
    ? (await client.query<{ name: string }>('select name from kysely_migration order by name')).rows.map((r) => r.name)
    : []
  return { migrations, counts }
}

/** The PostgreSQL store's part of a snapshot (snapshot.ts writeSnapshot): a pg_dump of its schema. */
export function postgresPart(databaseUrl: string) {
  return async (partial: string): Promise<DatabasePart> => {
    const pgDump = tool('pg_dump')
    const pgRestore = tool('pg_restore')
    const client = await connect(databaseUrl)
    const file = join(partial, POSTGRES_DUMP)
    try {
      await client.query('begin isolation level repeatable read read only')
      const { snapshot, schema } = (
        await client.query<{ snapshot: string; schema: string }>('select pg_export_snapshot() as snapshot, current_schema() as schema')
      ).rows[0] as { snapshot: string; schema: string }
      const { migrations, counts } = await describe(client, schema)
      const { dbname, env } = libpq(databaseUrl)
      await run(
        pgDump,
        [
          '--format=custom',
          '--no-owner',
          '--no-privileges',
          `--schema=${schema}`,
          `--snapshot=${snapshot}`,
          `--file=${file}`,
          `--dbname=${dbname}`,
        ],
        { env, maxBuffer: 16 << 20 },
      )
      await client.query('commit')
      privateFile(file)
      // The archive reads back whole: pg_restore lists every entry of it.
      await run(pgRestore, ['--list', file], { maxBuffer: 64 << 20 })
      fsyncPath(file)
      return { store: 'postgres', schema, migrations, counts, files: { [POSTGRES_DUMP]: checksum(file) } }
    } finally {
      await client.end()
    }
  }
}

/**
 * Restores a PostgreSQL snapshot into the database `databaseUrl` names, which must not hold
 * studio-api's tables yet (a restore never overwrites: create an empty database and point
 * DATABASE_URL at it; the old one stays as it was). The connection must work in the schema the
 * snapshot was taken from. One transaction: all or nothing.
 */
export async function restorePostgres(dir: string, manifest: Manifest, databaseUrl: string): Promise<Record<string, number>> {
  const pgRestore = tool('pg_restore')
  const dump = join(dir, POSTGRES_DUMP)
  const expected = manifest.files[POSTGRES_DUMP]
  if (!expected || checksum(dump).sha256 !== expected.sha256) {
    throw new Error(`${dir} is damaged: ${POSTGRES_DUMP} is missing or does not match the checksum in its manifest`)
  }
  const client = await connect(databaseUrl)
  try {
    const schema = (await client.query<{ schema: string }>('select current_schema() as schema')).rows[0]?.schema
    if (schema !== manifest.schema) {
      throw new Error(
        `the snapshot holds schema ${manifest.schema} but DATABASE_URL's connection works in ${schema ?? '(no schema)'}: restore into a database where the server's search_path is ${manifest.schema}`,
      )
    }
    const held = (
      await client.query<{ n: string }>('select count(*) as n from information_schema.tables where table_schema = $1', [schema])
    ).rows[0]?.n
    if (Number(held) > 0) {
      throw new Error(
        `the database DATABASE_URL names already has tables in schema ${schema}: restore into an empty database (createdb), then point the server's DATABASE_URL at it; the old database is left as it is`,
      )
    }
    // The schema exists already (public always does): its CREATE SCHEMA is left out of the restore.
    const scratch = mkdtempSync(join(tmpdir(), 'studio-restore-'))
    const list = join(scratch, 'entries')
    const { stdout } = await run(pgRestore, ['--list', dump], { maxBuffer: 64 << 20 })
    const entries = stdout.split('\n').filter((line) => !new RegExp(`^\\d+; \\d+ \\d+ (SCHEMA|COMMENT) - (SCHEMA )?${schema} `).test(line))
    writeFileSync(list, entries.join('\n'), { mode: 0o600 })
    try {
      const { dbname, env } = libpq(databaseUrl)
      await run(
        pgRestore,
        ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--use-list=${list}`, `--dbname=${dbname}`, dump],
        { env, maxBuffer: 16 << 20 },
      )
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
    return (await describe(client, schema as string)).counts
  } finally {
    await client.end()
  }
}
