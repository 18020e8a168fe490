// Backups and restore (features/backup, scripts/backup.ts) on real processes:
//  1. a flood of 2,000 leads with `npm run backup` in the middle; restore into a fresh folder;
//     a server started on it has every lead acknowledged before the backup began, the bootstrap
//     client authenticates with its old secret, a token issued before the backup is accepted,
//     the webhook endpoint and its pending deliveries are there;
//  2. a backup killed (kill -9) midway leaves nothing named as a finished backup, and the next
//     one works;
//  3. restore refuses a folder a running server uses (even with --force) and one that holds a
//     database; --force moves it aside, untouched;
//  4. PostgreSQL: backup drives pg_dump, restore pg_restore into an empty database.
// The scheduled backups and the snapshot before a migration: backup-schedule.test.ts.
// SQLite whatever the suite's backend, but for 4.
import { type ChildProcess, spawn } from 'node:child_process'
import { appendFileSync, cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { type Config, createConfig, projectRoot } from '../../config.js'
import { checksum } from '../../features/backup/files.js'
import { migrationNames } from '../../plugins/store/migrations.js'
import { cliBundle } from '../helpers/bundles.js'
import { field, run } from '../helpers/cli.js'
import { readLog, submitMany } from '../helpers/flood.js'
import { testdir } from '../helpers/folders.js'
import {
  freePort,
  freshMachineDatabase,
  needsMachinePostgres,
  requirePart,
  type ServerProcess,
  startServer,
  tokenFrom,
} from '../helpers/processes.js'

// Real servers and CLIs, each started through tsx: minutes on a loaded machine.
t.setTimeout(600_000)

const RAISED = { RATE_LIMITS: 'submitLead=1000000, getLeads=1000000, issueToken=1000000' }

const sqliteConfig = (dataDir: string): Config => createConfig({ dataDir, databaseUrl: undefined })

/** `npm run backup -- --to DIR` on a data folder; the path it printed. */
async function backup(t: Test, dataDir: string, into: string, env: Record<string, string> = {}): Promise<string> {
  const res = await run('backup', ['backup', '--to', into], sqliteConfig(dataDir), env)
  t.equal(res.code, 0, `backup: ${res.stderr}`)
  const m = /^backup: (\S+) \(leads \d+, clients \d+.*, [\d.]+ [kMG]?B\)$/m.exec(res.stdout)
  if (!m?.[1]) throw new Error(`no backup line in ${res.stdout}${res.stderr}`)
  return m[1]
}

const restore = (dataDir: string, from: string, ...extra: string[]) =>
  run('backup', ['restore', '--from', from, ...extra], sqliteConfig(dataDir))

const finishedIn = (dir: string) =>
  existsSync(dir)
    ? readdirSync(dir)
        .filter((n) => n.startsWith('studio-backup-'))
        .sort()
    : []

/** Every file under a folder with its checksum: what "untouched" means. */
function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const rel of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(dir, rel)
    try {
      out[rel] = checksum(path).sha256
    } catch {
      out[rel] = 'folder'
    }
  }
  return out
}

const bootstrapOf = (dataDir: string) =>
  JSON.parse(readFileSync(join(dataDir, 'bootstrap-client.json'), 'utf8')) as { client_id: string; client_secret: string }

t.test('a flood of 2,000 leads with a backup in the middle; restored, a server has them all, and its keys', async (t) => {
  const root = testdir(t, {})
  const dataDir = join(root, 'var')
  const backups = join(root, 'backups')
  const restored = join(root, 'restored')
  // The embedded default: keys generated into the data folder (no JWT_PRIVATE_KEY, no SECRET_PEPPER).
  const port = await freePort()
  const base = { ...RAISED, PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, WEBHOOKS_ALLOW_PRIVATE: 'true' }
  let server: ServerProcess = await startServer(t, { ...base, DATA_DIR: dataDir, PORT: String(port) })
  const bootstrap = bootstrapOf(dataDir)
  const token = await tokenFrom(server.url, bootstrap.client_id, bootstrap.client_secret)

  // An endpoint nobody answers at: every lead's delivery stays pending.
  const deadPort = await freePort()
  const added = await run('webhooks', ['add', '--url', `http://127.0.0.1:${deadPort}/hook`], sqliteConfig(dataDir), {
    WEBHOOKS_ALLOW_PRIVATE: 'true',
  })
  t.equal(added.code, 0, added.stderr)
  const endpointId = field(added.stdout, 'endpoint_id')

  let ackedBefore: Set<string> | undefined
  let backupRun: Promise<string> | undefined
  const outcome = await submitMany(server.url, token, 2000, 32, (count, acked) => {
    if (count === 600 && !backupRun) {
      ackedBefore = new Set(acked.keys())
      backupRun = backup(t, dataDir, backups)
    }
  })
  const path = await (backupRun as Promise<string>)
  t.equal(outcome.acked.size, 2000, 'every lead of the flood was acknowledged (the backup held none up)')
  t.ok(ackedBefore && ackedBefore.size >= 600, `${ackedBefore?.size} leads acknowledged before the backup began`)
  t.equal(await server.stop(), 0)

  const manifest = JSON.parse(readFileSync(join(path, 'manifest.json'), 'utf8'))
  t.has(manifest, { kind: 'backup', store: 'sqlite', keys: { signing_key: 'in snapshot', secret_pepper: 'in snapshot' } })
  t.same(manifest.migrations, migrationNames(), 'the copy has every migration')
  for (const name of ['studio.db', 'keys/signing-key.pem', 'keys/secret-pepper', 'bootstrap-client.json', 'manifest.json']) {
    t.equal(statSync(join(path, name)).mode & 0o777, 0o600, `${name}: 0600`)
  }

  const res = await restore(restored, path)
  t.equal(res.code, 0, res.stderr)
  t.match(
    res.stdout,
    new RegExp(`^restored: ${restored} from ${path} \\(leads \\d+, clients 1, webhook endpoints 1, pending deliveries \\d+\\)`, 'm'),
  )
  const status = await run('webhooks', ['status'], sqliteConfig(restored))
  const pending = Number(new RegExp(`^${endpointId}\\twebhook\\t[^\\t]*\\t(\\d+)\\t`, 'm').exec(status.stdout)?.[1])
  t.ok(pending >= (ackedBefore?.size ?? Infinity), `the endpoint's pending deliveries are there (${pending})`)

  server = await startServer(t, { ...base, DATA_DIR: restored })
  const log = await readLog(server.url, token)
  t.pass('a token issued before the backup is accepted')
  const ids = new Set(log.map((l) => l.id))
  t.same(
    [...(ackedBefore ?? [])].filter((id) => !ids.has(id)),
    [],
    'every lead acknowledged before the backup began is there',
  )
  t.ok(
    log.every((l) => outcome.acked.has(l.id)),
    'and nothing but acknowledged leads',
  )
  await tokenFrom(server.url, bootstrap.client_id, bootstrap.client_secret)
  t.pass('the bootstrap client authenticates with its old secret')
  const list = await run('webhooks', ['list'], sqliteConfig(restored))
  t.match(list.stdout, new RegExp(`^${endpointId}\\tactive\\t`, 'm'), 'the webhook endpoint is there')
  t.equal(await server.stop(), 0)
})

/** The backup CLI started, waiting until it says it paused at `stage`. */
async function pausedBackup(dataDir: string, into: string, stage: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [cliBundle(), 'backup', '--to', into], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir, STUDIO_BACKUP_TEST_PAUSE: stage },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let err = ''
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (d) => {
      err += d
      if (err.includes(`paused at ${stage}`)) resolve()
    })
    child.once('exit', (code) => reject(new Error(`backup exited (${code}) before pausing: ${err}`)))
  })
  return child
}

for (const stage of ['copied', 'before-rename']) {
  t.test(`a backup killed with kill -9 at "${stage}" leaves nothing named as finished; the next works`, async (t) => {
    const root = testdir(t, {})
    const dataDir = join(root, 'var')
    const backups = join(root, 'backups')
    const server = await startServer(t, { DATA_DIR: dataDir })
    const child = await pausedBackup(dataDir, backups, stage)
    t.ok(
      readdirSync(backups).some((n) => /^\.studio-backup-\d{8}T\d{9}Z\.partial$/.test(n)),
      'it was writing, under a hidden .partial name',
    )
    child.kill('SIGKILL')
    await new Promise((r) => child.once('exit', r))
    t.same(finishedIn(backups), [], 'nothing named as a finished backup')
    const path = await backup(t, dataDir, backups)
    t.same(finishedIn(backups), [path.slice(backups.length + 1)], 'the next backup is the only finished one')
    t.same(
      readdirSync(backups).filter((n) => n.endsWith('.partial')),
      [],
      "and the killed one's leftovers are gone",
    )
    t.equal(await server.stop(), 0)
  })
}

t.test('restore refuses a folder a running server uses, and one holding a database; --force moves it aside', async (t) => {
  const root = testdir(t, {})
  const dataDir = join(root, 'var')
  const backups = join(root, 'backups')
  const server = await startServer(t, { DATA_DIR: dataDir })
  const path = await backup(t, dataDir, backups)

  for (const force of [[], ['--force']]) {
    const res = await restore(dataDir, path, ...force)
    t.equal(res.code, 1, `refused while the server runs ${force.join('')}`)
    t.match(res.stderr, `restore: a server is using ${dataDir}: stop it first`)
  }
  t.equal(await server.stop(), 0)
  const before = fingerprint(dataDir)

  const refused = await restore(dataDir, path)
  t.equal(refused.code, 1, 'refused: the folder holds a database')
  t.match(
    refused.stderr,
    new RegExp(
      `already holds a database \\(studio\\.db, [\\d.]+ kB\\): .*pass --force to move this one aside to ${dataDir}\\.before-restore-`,
    ),
  )
  t.same(fingerprint(dataDir), before, 'the refusals touched nothing')

  const forced = await restore(dataDir, path, '--force')
  t.equal(forced.code, 0, forced.stderr)
  const aside = /^moved aside: the folder that was there is now (\S+) \(nothing was deleted\)$/m.exec(forced.stdout)?.[1] ?? ''
  t.match(aside, `${dataDir}.before-restore-`)
  t.same(fingerprint(aside), before, 'the old folder is kept, whole and unchanged')
  t.ok(existsSync(join(dataDir, 'studio.db')), 'and the snapshot is the data folder now')
  const again = await startServer(t, { DATA_DIR: dataDir })
  const { client_id, client_secret } = bootstrapOf(dataDir)
  await tokenFrom(again.url, client_id, client_secret)
  t.equal(await again.stop(), 0)

  const partial = await restore(join(root, 'elsewhere'), join(backups, '.studio-backup-20260101T000000000Z.partial'))
  t.equal(partial.code, 1)
  t.match(partial.stderr, /is an unfinished snapshot/, 'an unfinished snapshot is refused')
  const notOne = await restore(join(root, 'elsewhere'), root)
  t.match(notOne.stderr, /is not a snapshot: it has no manifest\.json/)

  // A snapshot of a newer version, and a damaged one.
  const newer = join(root, 'newer')
  cpSync(path, newer, { recursive: true })
  const manifest = JSON.parse(readFileSync(join(newer, 'manifest.json'), 'utf8'))
  writeFileSync(join(newer, 'manifest.json'), JSON.stringify({ ...manifest, migrations: [...manifest.migrations, '999_future'] }))
  const fromNewer = await restore(join(root, 'elsewhere'), newer)
  t.equal(fromNewer.code, 1)
  t.match(fromNewer.stderr, /was written by a newer version of studio-api \(its database has migration 999_future/)
  const damaged = join(root, 'damaged')
  cpSync(path, damaged, { recursive: true })
  appendFileSync(join(damaged, 'keys', 'secret-pepper'), 'x')
  const fromDamaged = await restore(join(root, 'elsewhere'), damaged)
  t.equal(fromDamaged.code, 1)
  t.match(fromDamaged.stderr, /is damaged: keys\/secret-pepper does not match the checksum in its manifest/)
  t.notOk(existsSync(join(root, 'elsewhere')), 'a refused restore creates nothing')
  t.same(
    readdirSync(root).filter((n) => n.includes('.restoring-')),
    [],
    'and leaves no half-built folder',
  )
})

t.test('backup refuses a destination inside the data folder', async (t) => {
  const dataDir = join(testdir(t, {}), 'var')
  const server = await startServer(t, { DATA_DIR: dataDir })
  const res = await run('backup', ['backup', '--to', join(dataDir, 'backups')], sqliteConfig(dataDir))
  t.equal(res.code, 64)
  t.match(res.stderr, /overlap: backups live outside the data folder/)
  t.equal(await server.stop(), 0)
})

t.test('PostgreSQL: backup drives pg_dump; restore fills an empty database and the data folder', async (t) => {
  const source = await freshMachineDatabase(t)
  if (!needsMachinePostgres(t, source)) return
  if (!requirePart(t, existsSync('/usr/bin/pg_dump'), 'pg_dump and pg_restore', 'apt-get install postgresql-client')) return
  const target = (await freshMachineDatabase(t)) as string
  const root = testdir(t, {})
  const dataDir = join(root, 'var')
  const port = await freePort()
  const base = { ...RAISED, PUBLIC_BASE_URL: `http://127.0.0.1:${port}` }
  let server = await startServer(t, { ...base, DATA_DIR: dataDir, DATABASE_URL: source, PORT: String(port) })
  const { client_id, client_secret } = bootstrapOf(dataDir)
  const token = await tokenFrom(server.url, client_id, client_secret)
  const sent = await submitMany(server.url, token, 50, 4)
  t.equal(sent.acked.size, 50)

  const pg = { ...sqliteConfig(dataDir), databaseUrl: source }
  const res = await run('backup', ['backup', '--to', join(root, 'backups')], pg)
  t.equal(res.code, 0, res.stderr)
  const path = /^backup: (\S+) \(leads 50, clients 1,/m.exec(res.stdout)?.[1] ?? ''
  t.ok(existsSync(join(path, 'database.pgdump')), 'a pg_dump archive')
  t.equal(await server.stop(), 0)

  const into = { ...sqliteConfig(join(root, 'restored')), databaseUrl: target }
  const restored = await run('backup', ['restore', '--from', path], into)
  t.equal(restored.code, 0, restored.stderr)
  t.match(restored.stdout, /^restored: .* \(leads 50, clients 1, /m)
  const twice = await run('backup', ['restore', '--from', path, '--force'], { ...into, dataDir: join(root, 'other') })
  t.equal(twice.code, 1, 'a database that holds tables is never overwritten')
  t.match(twice.stderr, /already has tables in schema public: restore into an empty database/)

  server = await startServer(t, { ...base, DATA_DIR: join(root, 'restored'), DATABASE_URL: target })
  const log = await readLog(server.url, token)
  t.same(new Set(log.map((l) => l.id)), new Set(sent.acked.keys()), 'every lead, and the old token verifies')
  await tokenFrom(server.url, client_id, client_secret)
  t.equal(await server.stop(), 0)
})

t.test('a new client created on a restored data folder uses the restored pepper', async (t) => {
  // The restored keys are the ones the server uses: a client created after the restore with the
  // CLI authenticates, so the CLI and the server agree on the pepper.
  const root = testdir(t, {})
  const dataDir = join(root, 'var')
  const server = await startServer(t, { DATA_DIR: dataDir })
  const path = await backup(t, dataDir, join(root, 'backups'))
  t.equal(await server.stop(), 0)
  const restored = join(root, 'restored')
  t.equal((await restore(restored, path)).code, 0)
  const again = await startServer(t, { DATA_DIR: restored })
  const created = await run('clients', ['create', '--name', 'after restore', '--scopes', 'read:leads'], sqliteConfig(restored))
  t.equal(created.code, 0, created.stderr)
  await tokenFrom(again.url, field(created.stdout, 'client_id'), field(created.stdout, 'client_secret'))
  t.equal(await again.stop(), 0)
})
