// The snapshot taken before migrations change an existing database (a start after an upgrade, or
// a CLI run by the new version first), so that a bad upgrade is one restore away: into
// BACKUP_DIR when set, else into a folder beside the data folder, `<DATA_DIR>-snapshots` (0700;
// never inside DATA_DIR, which must hold no copy of an erased lead). The newest
// KEEP_BEFORE_MIGRATION are kept. On SQLite a snapshot that fails stops the migration (and the
// start): the database is left as it was. On PostgreSQL the snapshot is a pg_dump when
// installed; otherwise the migrations run (each in a transaction) after a warning.
import { join } from 'node:path'
import type { Config } from '../../config.js'
import type { Dialect } from '../../plugins/store/migrations.js'
import { humanBytes } from './files.js'
import { onPath, POSTGRES_ADVICE, postgresPart } from './postgres.js'
import { type Snapshot, writeSnapshot } from './snapshot.js'

export const KEEP_BEFORE_MIGRATION = 3

export interface MigrationReport {
  info(fields: object, message: string): void
  warn(fields: object, message: string): void
}

/** Where the snapshots before migrations go. */
export const snapshotsDir = (config: Pick<Config, 'dataDir' | 'backupDir'>): string => config.backupDir ?? `${config.dataDir}-snapshots`

export function snapshotBeforeMigrating(
  config: Pick<Config, 'dataDir' | 'backupDir' | 'databaseUrl' | 'jwtPrivateKey' | 'secretPepper'>,
  report: MigrationReport,
): (pending: string[], dialect: Dialect) => Promise<void> {
  return async (pending, dialect) => {
    const into = snapshotsDir(config)
    if (dialect === 'postgres' && (!config.databaseUrl || !onPath('pg_dump'))) {
      report.warn(
        { migrations: pending },
        `applying migrations to an existing PostgreSQL database without a snapshot (pg_dump is not installed here): ${POSTGRES_ADVICE}`,
      )
      return
    }
    report.info({ migrations: pending, into }, 'taking a snapshot of the database before migrating it')
    let snapshot: Snapshot | undefined
    try {
      const options = {
        dataDir: config.dataDir,
        into,
        kind: 'before-migration' as const,
        keysFromEnvironment: { signingKey: config.jwtPrivateKey !== undefined, pepper: config.secretPepper !== undefined },
        keep: KEEP_BEFORE_MIGRATION,
        waitForLockMs: 10 * 60_000,
      }
      snapshot = (
        dialect === 'postgres' && config.databaseUrl
          ? await writeSnapshot(options, postgresPart(config.databaseUrl))
          : await writeSnapshot(options)
      ).written
    } catch (err) {
      throw new Error(
        `could not take the snapshot before migrating (${(err as Error).message}) into ${into}; nothing was migrated. Make room there, or set BACKUP_DIR to a folder with space`,
      )
    }
    if (!snapshot) return
    report.info(
      {
        snapshot: snapshot.path,
        leads: snapshot.manifest.counts.leads ?? 0,
        size: humanBytes(snapshot.bytes),
        restore: `DATA_DIR=<new folder> npm run restore -- --from ${join(snapshot.path)}`,
      },
      'snapshot taken before migrating; if the upgrade goes wrong, restore it with the previous version',
    )
  }
}
