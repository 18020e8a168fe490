// Backups and restore of the data (features/backup). Safe while the server runs and takes leads:
// the copy is one read transaction of its own (WAL), which never blocks the server's writer.
//
//   npm run backup -- --to DIR [--keep N]      one snapshot folder in DIR; prints `backup: PATH (...)`
//   DATA_DIR=NEW npm run restore -- --from PATH [--force]
//
// On PostgreSQL (DATABASE_URL) backup drives pg_dump and restore pg_restore, when installed.
import { isAbsolute, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { humanBytes, yieldCpu } from '../features/backup/files.js'
import { onPath, POSTGRES_ADVICE, postgresPart } from '../features/backup/postgres.js'
import { type Restored, restoreSnapshot } from '../features/backup/restore.js'
import {
  type CopyMethod,
  type Manifest,
  type PauseStage,
  type Snapshot,
  type SnapshotOptions,
  writeSnapshot,
} from '../features/backup/snapshot.js'
import { checkOwnership } from '../plugins/store/private-files.js'
import { commandLine, runCli, UsageError } from './cli.js'

const usage = `usage: npm run backup -- --to DIR [--keep N]
  writes one consistent snapshot (database, signing key, secret pepper, bootstrap credentials)
  into a new folder DIR/studio-backup-<time>, safe while the server runs; --keep N then removes
  the oldest snapshots in DIR beyond the newest N. DIR must be outside DATA_DIR.
usage: DATA_DIR=NEW npm run restore -- --from PATH [--force]
  restores the snapshot folder PATH as the data folder DATA_DIR. Refused while a server uses
  DATA_DIR, and when DATA_DIR already holds anything unless --force, which moves it aside to
  DATA_DIR.before-restore-<time> (nothing is deleted). On PostgreSQL, into an empty database.`

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      to: { type: 'string' },
      keep: { type: 'string' },
      from: { type: 'string' },
      force: { type: 'boolean' },
      // The bench compares SQLite's two ways of copying (bench/modes/backup.ts).
      method: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

const inside = (path: string, dir: string): boolean => {
  const rel = relative(dir, path)
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel))
}

/** What a snapshot holds, in one parenthesis. */
function holds(manifest: Manifest, bytes?: number): string {
  const c = manifest.counts
  const parts = [
    `leads ${c.leads ?? 0}`,
    `clients ${c.clients ?? 0}`,
    ...(c.webhook_endpoints === undefined ? [] : [`webhook endpoints ${c.webhook_endpoints}`]),
    ...(c.pending_deliveries === undefined ? [] : [`pending deliveries ${c.pending_deliveries}`]),
    ...(bytes === undefined ? [] : [humanBytes(bytes)]),
  ]
  return `(${parts.join(', ')})`
}

/** A line per key that the snapshot does not hold, saying where it must come from. */
function keyNotes(manifest: Manifest, restoring: boolean): string[] {
  const notes: string[] = []
  const keys: [keyof Manifest['keys'], string, string][] = [
    ['signing_key', 'JWT_PRIVATE_KEY', 'signing key'],
    ['secret_pepper', 'SECRET_PEPPER', 'secret pepper'],
  ]
  for (const [key, variable, what] of keys) {
    const source = manifest.keys[key]
    if (source === 'environment') {
      notes.push(
        restoring
          ? `note: the ${what} is not in the snapshot (it came from ${variable}): start the server with the same ${variable}`
          : `note: the ${what} comes from ${variable} and is not in the snapshot: keep it elsewhere (a secrets manager); a restore needs it`,
      )
    } else if (source === 'absent') {
      notes.push(
        `note: the data folder had no ${what} and ${variable} was not set${restoring ? '' : ' here'}: if the server takes it from its environment, keep it elsewhere; a restore needs it`,
      )
    }
  }
  return notes
}

/** Tests only: stop at a stage, to be killed there (test/backup.test.ts). */
function testPause(): ((stage: PauseStage) => void) | undefined {
  const at = process.env.STUDIO_BACKUP_TEST_PAUSE
  if (!at) return undefined
  return (stage) => {
    if (stage !== at) return
    process.stderr.write(`backup: paused at ${stage} (STUDIO_BACKUP_TEST_PAUSE)\n`)
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000)
  }
}

async function backup(values: ReturnType<typeof parseOptions>['values']): Promise<number> {
  if (!values.to) throw new UsageError('backup needs --to DIR')
  const keep = values.keep === undefined ? undefined : Number(values.keep)
  if (keep !== undefined && (!Number.isInteger(keep) || keep < 1)) throw new UsageError('--keep must be a whole number of at least 1')
  const method = (values.method ?? 'vacuum') as CopyMethod
  if (method !== 'vacuum' && method !== 'backup-api') throw new UsageError('--method is vacuum or backup-api')
  const config = loadConfig()
  const into = resolve(values.to)
  if (inside(into, config.dataDir) || inside(config.dataDir, into)) {
    throw new UsageError(
      `--to ${into} and DATA_DIR ${config.dataDir} overlap: backups live outside the data folder (an erasure leaves no copy of the erased there)`,
    )
  }
  checkOwnership(config.dataDir, 'this command')
  // The server on the same machine comes first (nice 19; the copy runs on this thread).
  yieldCpu()
  if (config.databaseUrl && !onPath('pg_dump')) {
    process.stderr.write(`backup: the store is PostgreSQL and pg_dump is not installed here: ${POSTGRES_ADVICE}\n`)
    return 1
  }
  const pause = testPause()
  const options: SnapshotOptions = {
    dataDir: config.dataDir,
    into,
    kind: 'backup',
    keysFromEnvironment: { signingKey: config.jwtPrivateKey !== undefined, pepper: config.secretPepper !== undefined },
    method,
    waitForLockMs: 10 * 60_000,
    ...(keep !== undefined && { keep }),
    ...(pause && { pause }),
  }
  const outcome = config.databaseUrl ? await writeSnapshot(options, postgresPart(config.databaseUrl)) : await writeSnapshot(options)
  const { path, manifest, bytes, seconds, removed } = outcome.written as Snapshot
  process.stdout.write(`backup: ${path} ${holds(manifest, bytes)}\n`)
  const held = ['database', ...(manifest.keys.signing_key === 'in snapshot' ? ['signing key'] : [])]
  if (manifest.keys.secret_pepper === 'in snapshot') held.push('secret pepper')
  if (manifest.files['bootstrap-client.json']) held.push('bootstrap credentials')
  process.stdout.write(`holds: ${held.join(', ')}; integrity checked; written in ${seconds.toFixed(1)} s\n`)
  for (const note of keyNotes(manifest, false)) process.stdout.write(`${note}\n`)
  for (const old of removed) process.stdout.write(`removed: ${old} (older than the newest ${keep})\n`)
  return 0
}

async function restore(values: ReturnType<typeof parseOptions>['values']): Promise<number> {
  if (!values.from) throw new UsageError('restore needs --from PATH (a snapshot folder)')
  const config = loadConfig()
  const restored: Restored = await restoreSnapshot({
    from: values.from,
    dataDir: config.dataDir,
    force: values.force === true,
    databaseUrl: config.databaseUrl,
  })
  const where = restored.manifest.store === 'postgres' ? `${restored.dataDir} and the database` : restored.dataDir
  process.stdout.write(
    `restored: ${where} from ${resolve(values.from)} ${holds({ ...restored.manifest, counts: restored.counts })}, taken ${restored.manifest.taken_at}\n`,
  )
  if (restored.movedAside)
    process.stdout.write(`moved aside: the folder that was there is now ${restored.movedAside} (nothing was deleted)\n`)
  for (const note of keyNotes(restored.manifest, true)) process.stdout.write(`${note}\n`)
  process.stdout.write('start the server on it: npm start\n')
  return 0
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = commandLine(() => parseOptions(argv))
  if (values.help) {
    process.stdout.write(`${usage}\n`)
    return 0
  }
  const [command] = positionals
  if (command === 'backup') return backup(values)
  if (command === 'restore') return restore(values)
  throw new UsageError(command ? `unknown command ${command}` : 'no command given (backup or restore)')
}

runCli(process.argv[2] === 'restore' ? 'restore' : 'backup', usage, main)
