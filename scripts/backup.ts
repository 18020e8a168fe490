// `studio backup` and `studio restore`: backups and restore of the data (features/backup). Safe
// while the server runs and takes leads: the copy is one read transaction of its own (WAL), which
// never blocks the server's writer.
//
//   npx studio backup --to DIR [--keep N]      one snapshot folder in DIR; prints `backup: PATH (...)`
//   DATA_DIR=NEW npx studio restore --from PATH [--force]
//
// On PostgreSQL (DATABASE_URL) backup drives pg_dump and restore pg_restore, when installed.
import { isAbsolute, relative, resolve } from 'node:path'
import type { Command } from 'commander'
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
import { act, command, UsageError } from './cli.js'

interface Values {
  to?: string
  keep?: string
  from?: string
  force?: boolean
  method?: string
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

/** Tests only: stop at a stage, to be killed there (test/system/backup.test.ts). */
function testPause(): ((stage: PauseStage) => void) | undefined {
  const at = process.env.STUDIO_BACKUP_TEST_PAUSE
  if (!at) return undefined
  return (stage) => {
    if (stage !== at) return
    process.stderr.write(`backup: paused at ${stage} (STUDIO_BACKUP_TEST_PAUSE)\n`)
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000)
  }
}

async function backup(values: Values): Promise<number> {
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

async function restore(values: Values): Promise<number> {
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
  process.stdout.write(
    `next: start the server on it: DATA_DIR=${restored.dataDir} npm start\n` +
      'with the PUBLIC_BASE_URL the backed-up server had: the tokens it issued name that URL as their issuer, and a server\n' +
      'on another PUBLIC_BASE_URL refuses them (clients then ask for new tokens with their credentials, which still work)\n',
  )
  return 0
}

export function backupCommand(): Command {
  return (
    command(
      'backup',
      'write one consistent snapshot (database, signing key, secret pepper, bootstrap credentials) into a new folder DIR/studio-backup-<time>; safe while the server runs',
      'a snapshot of the data, now',
    )
      .option('--to <dir>', 'where the snapshot folder goes: outside DATA_DIR')
      .option('--keep <n>', 'then remove the oldest snapshots in DIR beyond the newest N')
      // The bench compares SQLite's two ways of copying (bench/modes/backup.ts).
      .option('--method <method>', 'how SQLite is copied: vacuum (default) or backup-api')
      .action(act((values: Values) => backup(values)))
  )
}

export function restoreCommand(): Command {
  return command(
    'restore',
    'restore a snapshot folder as the data folder DATA_DIR: refused while a server uses DATA_DIR, and when DATA_DIR holds anything unless --force (which moves it aside; nothing is deleted). On PostgreSQL, into an empty database',
    'a snapshot as a new data folder',
  )
    .option('--from <path>', 'the snapshot folder (studio-backup-<time>)')
    .option('--force', 'move what DATA_DIR holds aside to DATA_DIR.before-restore-<time> first')
    .action(act((values: Values) => restore(values)))
}
