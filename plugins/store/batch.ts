// A batch: statements that commit together, sent in one round trip. The lead writer stores each
// group of leads this way, with what other features write about them (the outbox), so a commit
// costs the event loop one answer to wait for, however many statements it holds: on PostgreSQL
// one simple-protocol message (several statements in one message are one transaction, which
// PostgreSQL commits, or rolls back whole, before it answers), on SQLite one message to the
// writer thread (sqlite-thread.ts), which runs them between BEGIN IMMEDIATE and COMMIT.
//
// PostgreSQL's simple protocol takes no parameters, so a batch's statements carry their values
// inline: `BatchValues` writes them as literals on PostgreSQL (dollar-quoted, or escaped by the
// pg driver's escapeLiteral), and as bound parameters on SQLite. Rows travel as one JSON array read as a table
// (json_to_recordset, json_each): one value per statement whatever the number of rows, so the
// statement's text is the same for every batch and costs neither side a value-by-value build.
import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database } from './schema.js'

/** What one statement of a batch returned: its rows (RETURNING), and how many rows it wrote. */
export interface BatchResult {
  rows: Record<string, unknown>[]
  rowCount: number
}

/** Values in a batch's statements, as the store's dialect carries them. */
export interface BatchValues {
  /** A text value (or NULL). */
  text(value: string | null): RawBuilder<unknown>
  /**
   * Objects as a table named `alias`, one row each, with the given properties as its columns, all
   * text (a missing or null property is NULL). Strings that are not well-formed UTF-16 (a lone
   * surrogate) have it replaced by U+FFFD, as a UTF-8 database would store it anyway.
   */
  rows(objects: readonly object[], columns: readonly string[], alias: string): RawBuilder<unknown>
  /**
   * Ends an EXISTS subquery that looks rows of a big table up by an indexed key, once per row of
   * such a JSON table: PostgreSQL, which guesses a JSON table holds 100 rows, would otherwise plan
   * it as a hash join over the whole big table (OFFSET 0 keeps it a subquery run per row, through
   * the index); SQLite already looks up each row.
   */
  readonly perRow: RawBuilder<unknown>
}

/** Runs statements as one transaction in one round trip; `lock` names a lock held for it (see Store.batch). */
export type RunBatch = (statements: readonly RawBuilder<unknown>[], lock?: string) => Promise<BatchResult[]>

const NAME = /^[a-z_][a-z0-9_]*$/
function names(columns: readonly string[], alias: string): void {
  for (const name of [...columns, alias]) if (!NAME.test(name)) throw new Error(`batch: ${name} is not a plain column name`)
}

/** JSON.stringify's escape of a lone surrogate (it writes well-formed pairs as they are). */
const LONE_SURROGATE = /\\ud[89a-f]/
/** The objects as JSON text that both databases accept. */
export function batchJson(objects: readonly object[]): string {
  const json = JSON.stringify(objects)
  if (!LONE_SURROGATE.test(json)) return json
  return JSON.stringify(objects, (_key, value: unknown) => (typeof value === 'string' ? value.toWellFormed() : value))
}

/** The tag of a batch's dollar-quoted literals. */
const TAG = '$studio$'

/**
 * PostgreSQL: literals. Dollar-quoted, which PostgreSQL takes as they are (no escapes to write
 * or to read: the JSON of a batch is long and full of backslashes), unless the text holds the
 * quote's tag itself; then escaped by the driver's own escapeLiteral.
 */
export function postgresValues(escapeLiteral: (text: string) => string): BatchValues {
  const literal = (text: string) => (text.includes(TAG) ? escapeLiteral(text) : `${TAG}${text}${TAG}`)
  return {
    text: (value) => sql.raw(value === null ? 'null' : literal(value)),
    rows: (objects, columns, alias) => {
      names(columns, alias)
      const shape = columns.map((c) => `${c} text`).join(', ')
      return sql.raw(`json_to_recordset(${literal(batchJson(objects))}::json) as ${alias}(${shape})`)
    },
    perRow: sql.raw(' offset 0'),
  }
}

/** SQLite: bound parameters. */
export const sqliteValues: BatchValues = {
  text: (value) => sql`${value}`,
  rows: (objects, columns, alias) => {
    names(columns, alias)
    const shape = columns.map((c) => `value ->> '${c}' as ${c}`).join(', ')
    return sql`(select ${sql.raw(shape)} from json_each(${batchJson(objects)})) as ${sql.raw(alias)}`
  },
  perRow: sql``,
}

/** What pg answers for one statement (a query of several answers an array of them). */
interface PgAnswer {
  rows: Record<string, unknown>[]
  rowCount: number | null
}

/**
 * A PostgreSQL batch over a pg pool: the statements, each compiled with its values inline (one
 * with a parameter is refused: it cannot go in the message), joined into one query. A named lock
 * first: a transaction-scoped advisory lock of the schema, held until the batch commits.
 */
export function postgresBatch(
  db: Kysely<Database>,
  query: (text: string) => Promise<PgAnswer | PgAnswer[]>,
  escapeLiteral: (text: string) => string,
): RunBatch {
  return async (statements, lock) => {
    const texts = statements.map((statement) => {
      const compiled = statement.compile(db)
      if (compiled.parameters.length > 0) throw new Error('batch: a statement with parameters (use BatchValues)')
      return compiled.sql
    })
    if (lock !== undefined) texts.unshift(`select pg_advisory_xact_lock(hashtext(current_schema() || ${escapeLiteral(`.${lock}`)}))`)
    const answer = await query(texts.join(';\n'))
    const results = (Array.isArray(answer) ? answer : [answer]).map((r) => ({ rows: r.rows, rowCount: r.rowCount ?? 0 }))
    return lock === undefined ? results : results.slice(1)
  }
}

/** The values and the runner of a store's dialect (SQLite's runner is its writer thread's). */
export interface Batches {
  values: BatchValues
  batch: RunBatch
}
