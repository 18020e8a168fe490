// What the scale-out mode reads of PostgreSQL: its transactions and WAL around each run, and the
// latency of a durable commit in series (what the naive endpoint pays per lead).
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type pg from 'pg'

/**
 * PostgreSQL's transactions and WAL so far, server-wide (the runs are one at a time, so a run's
 * changes are its own): transaction ids assigned (one per writing transaction; read at once,
 * unlike pg_stat_*, which backends report up to a second late) and WAL bytes inserted.
 */
export const PG_XACTS = 'pg transactions'
export const WAL_BYTES = 'wal bytes'

export async function walCounters(admin: pg.Client): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ xacts: string; wal: string }>(
    `select pg_snapshot_xmax(pg_current_snapshot())::text as xacts,
            pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text as wal`,
  )
  return { [PG_XACTS]: Number(rows[0]?.xacts), [WAL_BYTES]: Number(rows[0]?.wal) }
}

export interface CommitLatency {
  commits: number
  medianUs: number
  p90Us: number
}

/** Durable one-row commits in series on the bench's PostgreSQL: what the naive endpoint pays per lead. */
export async function commitLatency(admin: pg.Client, commits = 300): Promise<CommitLatency> {
  const table = `studio_bench_commit_probe_${randomBytes(3).toString('hex')}`
  await admin.query(`create table ${table} (n integer not null)`)
  try {
    const us: number[] = []
    for (let i = 0; i < commits; i++) {
      const t0 = performance.now()
      await admin.query(`insert into ${table} (n) values ($1)`, [i])
      us.push((performance.now() - t0) * 1000)
    }
    us.sort((a, b) => a - b)
    return { commits, medianUs: us[Math.floor(commits / 2)] ?? Number.NaN, p90Us: us[Math.floor(commits * 0.9)] ?? Number.NaN }
  } finally {
    await admin.query(`drop table ${table}`)
  }
}
