// Scheduled backups (BACKUP_DIR) and the snapshot a start takes before it migrates an existing
// database, on apps built in this process (each backup still runs on its worker thread):
//  - backups appear on time, the oldest go past BACKUP_KEEP, the metric moves, and two instances
//    on one data folder (npm run cluster) write one backup per interval between them;
//  - a failing backup is a warn line and a count, and the server keeps serving;
//  - a start that applies a migration to an existing database snapshots it first; a new one not.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, SqliteDialect } from 'kysely'
import t from 'tap'
import { buildApp } from '../../app.js'
import { createConfig } from '../../config.js'
import { migrationNames, migrator } from '../../plugins/store/migrations.js'
import { testdir } from '../helpers/folders.js'
import { captureLog } from '../helpers/log.js'

const finishedIn = (dir: string) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => n.startsWith('studio-backup-'))
        .sort()
    : []

/** The value of an unlabelled metric. */
async function metric(app: Awaited<ReturnType<typeof buildApp>>, name: string): Promise<number | undefined> {
  const value = (await app.metrics.registry.getSingleMetric(name)?.get())?.values[0]?.value
  return value
}

async function until(what: string, check: () => boolean | Promise<boolean>, withinMs = 60_000): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs / 1000} s: ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

t.test('scheduled backups: on time, the oldest removed past BACKUP_KEEP, the metric moves, one per interval', async (t) => {
  // Removed after both apps are closed (helpers/folders.ts): removed before, it raced a backup
  // being written (ENOTEMPTY in CI), and the apps left open kept the file running to its timeout.
  const root = testdir(t, {})
  const log = captureLog()
  const config = createConfig({
    dataDir: join(root, 'var'),
    databaseUrl: undefined,
    backupDir: join(root, 'backups'),
    // 1.8 s: the test's knob is a fraction of a minute.
    backupIntervalMinutes: 0.03,
    backupKeep: 2,
    logLevel: 'info',
  })
  const app = await buildApp(config, { logger: { level: 'info', stream: log.stream } })
  t.teardown(() => app.close())
  await app.ready()
  // A second instance on the same data folder (as npm run cluster runs them).
  const twin = await buildApp(config)
  t.teardown(() => twin.close())
  await twin.ready()

  await until('a first backup', () => finishedIn(config.backupDir as string).length >= 1)
  const first = await metric(app, 'studio_backup_last_success_timestamp_seconds')
  t.ok(first && Math.abs(first * 1000 - Date.now()) < 60_000, 'the metric says when the newest backup was taken')
  await until('four backups written', () => log.lines().filter((l) => l.msg === 'scheduled backup written').length >= 4, 120_000)
  const names = finishedIn(config.backupDir as string)
  t.equal(names.length, 2, 'the newest BACKUP_KEEP are kept, the oldest removed')
  const written = log.lines().filter((l) => l.msg === 'scheduled backup written')
  t.ok(
    written.some((l) => (l.removed as string[]).length > 0),
    'a backup said which old ones it removed',
  )
  const later = await metric(app, 'studio_backup_last_success_timestamp_seconds')
  t.ok(later && first && later > first, 'the metric moved')
  t.equal(await metric(twin, 'studio_backup_last_success_timestamp_seconds'), later, 'both instances report the same')
  t.equal(await metric(app, 'studio_backup_failures_total'), 0, 'no failure')

  // One backup per interval between the two instances: never two within half an interval.
  const times = written.map((l) => Date.parse(String(l.time)))
  const taken = written.map((l) => String(l.backup).replace(/^.*studio-backup-/, '')).sort()
  t.equal(new Set(taken).size, taken.length, 'no backup written twice')
  t.ok(times.length >= 4)
  const stamps = written
    .map((l) => /(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z/.exec(String(l.backup)))
    .map((m) => Date.parse(`${m?.[1]}-${m?.[2]}-${m?.[3]}T${m?.[4]}:${m?.[5]}:${m?.[6]}.${m?.[7]}Z`))
    .sort((a, b) => a - b)
  const gaps = stamps.slice(1).map((s, i) => s - (stamps[i] as number))
  t.ok(
    gaps.every((g) => g >= (0.03 * 60_000) / 2),
    `the two instances wrote one backup per interval between them (gaps ${gaps.join(', ')} ms)`,
  )
})

t.test('a failing scheduled backup: a warn line and the failure counter; the server keeps serving', async (t) => {
  const root = testdir(t, { blocked: 'a file where the folder should be' })
  const log = captureLog()
  const config = createConfig({
    dataDir: join(root, 'var'),
    databaseUrl: undefined,
    backupDir: join(root, 'blocked', 'backups'),
    backupIntervalMinutes: 0.03,
    logLevel: 'info',
  })
  const app = await buildApp(config, { logger: { level: 'info', stream: log.stream } })
  t.teardown(() => app.close())
  await app.ready()
  await until('a failure', async () => ((await metric(app, 'studio_backup_failures_total')) ?? 0) >= 1)
  const warned = log.lines().filter((l) => l.level === 40 && l.msg === 'scheduled backup failed')
  t.equal(warned.length, 1, 'one warn line')
  t.match(warned[0], { err: { message: /ENOTDIR|not a directory/ }, backup_dir: config.backupDir })
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200, 'the server is still ready')
})

/** A database at the migration before the newest: what the previous version left. */
async function previousVersionDatabase(dataDir: string): Promise<void> {
  const names = migrationNames()
  rmSync(dataDir, { recursive: true, force: true })
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const sqlite = new SQLite(join(dataDir, 'studio.db'))
  sqlite.pragma('journal_mode = WAL')
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: sqlite }) })
  const { error } = await (await migrator(db, 'sqlite')).migrateTo(names.at(-2) as string)
  if (error) throw error
  await db.destroy()
}

t.test('a start that migrates an existing database takes a snapshot first; a fresh one does not', async (t) => {
  const root = testdir(t, {})
  const dataDir = join(root, 'var')
  const fresh = captureLog()
  const first = await buildApp(createConfig({ dataDir, databaseUrl: undefined, logLevel: 'info' }), {
    logger: { level: 'info', stream: fresh.stream },
  })
  await first.ready()
  await first.close()
  t.notOk(existsSync(`${dataDir}-snapshots`), 'a new database: no snapshot')
  t.notOk(fresh.lines().some((l) => /snapshot/.test(l.msg)))

  await previousVersionDatabase(dataDir)
  const upgraded = captureLog()
  const app = await buildApp(createConfig({ dataDir, databaseUrl: undefined, logLevel: 'info' }), {
    logger: { level: 'info', stream: upgraded.stream },
  })
  t.teardown(() => app.close())
  await app.ready()
  const snapshots = readdirSync(`${dataDir}-snapshots`).filter((n) => n.startsWith('studio-before-migration-'))
  t.equal(snapshots.length, 1, `a snapshot beside the data folder, in ${dataDir}-snapshots`)
  const path = join(`${dataDir}-snapshots`, snapshots[0] as string)
  const manifest = JSON.parse(readFileSync(join(path, 'manifest.json'), 'utf8'))
  t.same(manifest.migrations, migrationNames().slice(0, -1), 'taken before the new migration ran')
  const taken = upgraded.lines().find((l) => l.msg.startsWith('snapshot taken before migrating'))
  t.match(taken, { snapshot: path, restore: `DATA_DIR=<new folder> npm run restore -- --from ${path}` }, 'the log says where')
  t.equal((await app.inject({ url: '/readyz' })).statusCode, 200, 'and the server runs on the migrated database')
})
