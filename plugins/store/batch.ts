// Kept for its figure (bench/README.md, "The ablation": `npm run bench -- --ablation=pg-batch`):
// submitLead on PostgreSQL, about twice the leads/s of parameterized queries and BEGIN … COMMIT
// on one client, at less server CPU per lead.
//
// A batch: statements that commit together, sent in one round trip. The lead writer stores each
// group of leads this way, with what other features write about them (the outbox), so a commit
// costs the event loop one answer to wait for, however many statements it holds: on PostgreSQL
// one simple-protocol message (several statements in one message are one transaction, which
// PostgreSQL commits, or rolls back whole, before it answers), on SQLite one message to the
// writer thread (sqlite-thread.ts), which runs them between BEGIN IMMEDIATE and COMMIT.
//
// A batch's statements take their values as bound parameters. PostgreSQL's simple
// protocol takes none, so there each statement is one the connection has prepared, run by EXECUTE
// with its values as literals (postgresBatch). Rows travel as one JSON array read as a table
// (json_to_recordset, json_each): one value per statement whatever the number of rows, so the
// statement's text is the same for every batch, costs neither side a value-by-value build, and is
// prepared once per connection.
import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { Database } from './schema.js'
import { turnStatement } from './turns.js'

/** What one statement of a batch returned: its rows (RETURNING), and how many rows it wrote. */
export interface BatchResult {
  rows: Record<string, unknown>[]
  rowCount: number
}

/**
 * What a batch's statements write differently on each dialect (a plain value is a bound parameter
 * on both: sql`${value}`).
 */
export interface BatchValues {
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

/** PostgreSQL: bound parameters, like SQLite's; postgresBatch turns them into EXECUTE's arguments. */
export const postgresValues: BatchValues = {
  rows: (objects, columns, alias) => {
    names(columns, alias)
    const shape = columns.map((c) => `${c} text`).join(', ')
    return sql`json_to_recordset(${batchJson(objects)}::json) as ${sql.raw(alias)}(${sql.raw(shape)})`
  },
  perRow: sql.raw(' offset 0'),
}

/** SQLite: bound parameters. */
export const sqliteValues: BatchValues = {
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

/** A pooled connection, as postgresBatch uses it. */
export interface PgConnection {
  query(text: string): Promise<PgAnswer | PgAnswer[]>
  /** Back to the pool; with an error, closed instead (its session state is then unknown). */
  release(err?: Error): void
}

/** Texts a connection keeps prepared at most (a batch's texts are a handful, and constant). */
const PREPARED_TEXTS = 64

/**
 * A PostgreSQL batch over a pg pool, in one simple-protocol message (which takes no parameters).
 * Each statement runs as EXECUTE of a statement the connection has prepared, with its values as
 * literals: dollar-quoted, which PostgreSQL takes as they are (no escapes to write or to read: a
 * batch's JSON is long and full of backslashes), or, when the text holds the quote's tag, escaped
 * by the driver's own escapeLiteral. The first batch of a statement on a connection prepares it
 * in the same message; later ones only execute it, so PostgreSQL neither parses nor plans the
 * statement again, nor copies a long literal through its planner (that was about half of its
 * work for a batch of leads). A named lock first: the schema's turn (store/turns.ts), a
 * statement like the others, held until the batch commits.
 */
export function postgresBatch(
  db: Kysely<Database>,
  connect: () => Promise<PgConnection>,
  escapeLiteral: (text: string) => string,
): RunBatch {
  const literal = (value: unknown): string => {
    if (value === null || value === undefined) return 'null'
    if (typeof value === 'object' || typeof value === 'function' || typeof value === 'symbol') {
      throw new Error(`batch: a parameter of type ${typeof value} (a batch's values are text, numbers or null)`)
    }
    const text = String(value)
    return text.includes(TAG) ? escapeLiteral(text) : `${TAG}${text}${TAG}`
  }
  /** Prepared statements' names by text (the same names on every connection). */
  const named = new Map<string, string>()
  /** The names each connection has prepared. */
  const prepared = new WeakMap<PgConnection, Set<string>>()
  return async (statements, lock) => {
    // Compiled, and their arguments written, before a connection is taken: what throws here
    // holds none.
    const all = lock === undefined ? statements : [turnStatement(lock), ...statements]
    const compiled = all.map((statement) => {
      const query = statement.compile(db)
      return { sql: query.sql, args: args(query.parameters) }
    })
    const connection = await connect()
    let ready = prepared.get(connection)
    if (!ready) {
      ready = new Set()
      prepared.set(connection, ready)
    }
    const texts: string[] = []
    /** Where each statement's own answer is in the message's. */
    const answers: number[] = []
    for (const [i, { sql: text, args: values }] of compiled.entries()) {
      let name = named.get(text)
      if (name === undefined && named.size < PREPARED_TEXTS) {
        name = `studio_batch_${named.size + 1}`
        named.set(text, name)
      }
      if (name === undefined) {
        // More texts than a connection keeps: this one is prepared, run and forgotten in the message.
        texts.push(`prepare studio_batch_once_${i} as ${text}`)
        answers.push(texts.push(`execute studio_batch_once_${i}${values}`) - 1)
        texts.push(`deallocate studio_batch_once_${i}`)
        continue
      }
      if (!ready.has(name)) {
        texts.push(`prepare ${name} as ${text}`)
        ready.add(name)
      }
      answers.push(texts.push(`execute ${name}${values}`) - 1)
    }
    let answer: PgAnswer | PgAnswer[]
    try {
      answer = await connection.query(texts.join(';\n'))
    } catch (err) {
      // Which statements this connection now holds prepared is unknown: it is closed, not reused.
      connection.release(err as Error)
      throw err
    }
    connection.release()
    const got = Array.isArray(answer) ? answer : [answer]
    const results = answers.map((i) => ({ rows: got[i]?.rows ?? [], rowCount: got[i]?.rowCount ?? 0 }))
    // The turn's own answer is not the caller's.
    return lock === undefined ? results : results.slice(1)
  }

  function args(parameters: readonly unknown[]): string {
    return parameters.length === 0 ? '' : `(${parameters.map(literal).join(', ')})`
  }
}

/** The values and the runner of a store's dialect (SQLite's runner is its writer thread's). */
export interface Batches {
  values: BatchValues
  batch: RunBatch
}
