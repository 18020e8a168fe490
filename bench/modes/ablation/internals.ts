// The internals that replace a stock part (issue 36), each with the patch that swaps the stock
// part back in (bench/ablation/<name>.patch, made with git diff from a real edit of the sources)
// and the figures of the performance table it can move.

/** What the ablation measures (--only selects among them). */
export type Figure = 'getProjects' | 'issueToken' | 'submitLead' | 'readsDuringFlood' | 'submitLeadPostgres' | 'startup' | 'npmStart'

export interface Internal {
  /** Its patch: bench/ablation/<name>.patch. */
  name: string
  /** The internal, and where it is. */
  internal: string
  /** The stock part the patch puts back. */
  stock: string
  figures: readonly Figure[]
}

export const INTERNALS: readonly Internal[] = [
  {
    name: 'sqlite-thread',
    internal: 'SQLite writes on a worker thread through a custom Kysely dialect (plugins/store/sqlite-thread*.ts)',
    stock: "Kysely's SqliteDialect on better-sqlite3, every statement on the main thread; a batch is a Kysely transaction",
    figures: ['submitLead', 'readsDuringFlood', 'getProjects', 'startup'],
  },
  {
    name: 'pg-batch',
    internal: 'PostgreSQL batches in one message, PREPARE/EXECUTE with dollar-quoted literals (plugins/store/batch.ts)',
    stock: 'plain parameterized queries through pg, BEGIN … COMMIT on one pooled client (the group commit stays)',
    figures: ['submitLeadPostgres'],
  },
  {
    name: 'helmet-once',
    internal: 'helmet run once per kind of route against a recorder, its headers set by one hook (plugins/headers)',
    stock: '@fastify/helmet, per request, with the same options per kind of route',
    figures: ['getProjects', 'issueToken'],
  },
  {
    name: 'id-pool',
    internal: 'a random-byte pool for UUIDv7 ids (plugins/store/ids.ts)',
    stock: "uuid's v7() as is",
    figures: ['submitLead', 'submitLeadPostgres'],
  },
  {
    name: 'precompiled-validator',
    internal: "glue's OpenAPI validator precompiled into the bundle (scripts/precompiled-openapi-validator.mjs)",
    stock: "fastify-openapi-glue's own validator, compiled at every start",
    figures: ['startup'],
  },
  {
    name: 'incremental-start',
    internal: 'the incremental builder of npm start (scripts/start.mjs)',
    stock: '`npm run build`, then the bundle (npm start: npm run build && node dist/server.bundle.js)',
    figures: ['npmStart'],
  },
]
