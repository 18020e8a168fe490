// What the operator CLIs open: the storage and hash key the server uses. A missing SQLite file or
// key means a wrong DATA_DIR, or a data folder deleted under a running server; creating a new
// one there would give the operator a database (or key) the server never reads, so the CLIs
// create nothing unless told to with --new-database (a new installation set up before its first start).
import type { Config } from '../config.js'
import { type MigrationReport, snapshotBeforeMigrating } from '../features/backup/premigration.js'
import { databasePepper } from '../plugins/auth/secrets.js'
import { openStore, type Store } from '../plugins/store/open.js'
import { checkOwnership, MissingDataFile } from '../plugins/store/private-files.js'

export const NEW_DATABASE_USAGE = '--new-database                    create the database (and key) if the data folder has none'

function explained(err: unknown): unknown {
  return err instanceof MissingDataFile
    ? new Error(`${err.message}; nothing was created (pass --new-database to set up a new installation here)`)
    : err
}

/** What the snapshot before a migration reports, as lines on stderr (stdout is the command's). */
const stderrReport: MigrationReport = {
  info: (fields, message) => process.stderr.write(`${message}: ${JSON.stringify(fields)}\n`),
  warn: (fields, message) => process.stderr.write(`warning: ${message}: ${JSON.stringify(fields)}\n`),
}

export async function openServerStore(config: Config, newDatabase: boolean): Promise<Store> {
  checkOwnership(config.dataDir, 'this command')
  try {
    return await openStore(config, { create: newDatabase, beforeMigrating: snapshotBeforeMigrating(config, stderrReport) })
  } catch (err) {
    throw explained(err)
  }
}

/** The server's pepper, checked against the database (plugins/auth/secrets.ts databasePepper). */
export async function serverPepper(store: Store, config: Config, newDatabase: boolean): Promise<string> {
  try {
    return await databasePepper(store.db, config, newDatabase)
  } catch (err) {
    throw explained(err)
  }
}
