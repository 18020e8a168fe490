// Scheduled backups of the embedded store (BACKUP_DIR): a snapshot (snapshot.ts) every
// BACKUP_INTERVAL_MINUTES, the newest BACKUP_KEEP kept, each written by a worker thread of its
// own (backup-thread.ts) so that requests never wait for it. The schedule follows the newest
// backup in the folder, not the process: a restart does not postpone the next one, and instances
// sharing the data folder (npm run cluster) write one between them (a lock on the folder, and a
// backup that finished within half an interval counts as this one). A failure is a warn line,
// `studio_backup_failures_total`, and a retry within five minutes.
// `studio_backup_last_success_timestamp_seconds` is read from the folder at each scrape, so every
// instance reports the same.
import { Worker } from 'node:worker_threads'
import fp from 'fastify-plugin'
import { Counter, Gauge } from 'prom-client'
import type { Config } from '../../config.js'
import { finished } from './files.js'
import type { SnapshotOptions, SnapshotOutcome } from './snapshot.js'

/** A failed backup is tried again after at most this long. */
const RETRY_MS = 5 * 60_000

/** The thread: the compiled sibling (dist/, or the bundle's own), else the source through tsx (as sqlite-thread-dialect.ts). */
function startThread(options: SnapshotOptions): Worker {
  const resourceLimits = { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 64 }
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./backup-thread.js', import.meta.url), { workerData: options, resourceLimits })
  }
  const tsx = import.meta.resolve('tsx/esm/api')
  const source = new URL('./backup-thread.ts', import.meta.url).href
  return new Worker(`import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(source)}) })`, {
    eval: true,
    workerData: options,
    resourceLimits,
  })
}

/** Runs one snapshot on a thread of its own; `onStart` gets the thread (to stop it on close). */
function snapshotOnThread(options: SnapshotOptions, onStart: (worker: Worker) => void): Promise<SnapshotOutcome> {
  return new Promise((resolve, reject) => {
    const worker = startThread(options)
    onStart(worker)
    let settled = false
    worker.once('message', (reply: { outcome?: SnapshotOutcome; error?: string }) => {
      settled = true
      if (reply.outcome) resolve(reply.outcome)
      else reject(new Error(reply.error ?? 'the backup thread failed'))
    })
    worker.once('error', (err) => {
      settled = true
      reject(err)
    })
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the backup thread stopped (exit code ${code})`))
    })
  })
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const dir = config.backupDir
    if (dir === undefined) return
    if (app.store.dialect !== 'sqlite') {
      app.log.warn(
        { backup_dir: dir },
        'BACKUP_DIR is set, but the server schedules backups of the embedded SQLite store only: back PostgreSQL up with its own tools (npm run backup -- --to DIR drives pg_dump; run it from cron), see README "Backups"',
      )
      return
    }
    const interval = config.backupIntervalMinutes * 60_000

    new Gauge({
      name: 'studio_backup_last_success_timestamp_seconds',
      help: 'When the newest finished backup in BACKUP_DIR was taken (Unix time).',
      registers: [app.metrics.registry],
      collect() {
        const newest = finished(dir, 'backup').at(-1)
        if (newest) this.set(newest.time / 1000)
      },
    })
    const failures = new Counter({
      name: 'studio_backup_failures_total',
      help: 'Scheduled backups that failed (each also logged at warn).',
      registers: [app.metrics.registry],
    })
    const duration = new Gauge({
      name: 'studio_backup_last_duration_seconds',
      help: 'How long the last scheduled backup written by this instance took.',
      registers: [app.metrics.registry],
    })

    let timer: NodeJS.Timeout | undefined
    let thread: Worker | undefined
    let closing = false

    const schedule = (afterFailure: boolean) => {
      if (closing) return
      const newest = finished(dir, 'backup').at(-1)
      const due = newest ? Math.max(0, newest.time + interval - Date.now()) : 0
      timer = setTimeout(run, afterFailure ? Math.min(interval, RETRY_MS) : due)
      timer.unref()
    }

    const run = async () => {
      let failed = false
      try {
        const outcome = await snapshotOnThread(
          {
            dataDir: config.dataDir,
            into: dir,
            kind: 'backup',
            keysFromEnvironment: { signingKey: config.jwtPrivateKey !== undefined, pepper: config.secretPepper !== undefined },
            keep: config.backupKeep,
            // Another instance of the cluster wrote it, or is writing it: not twice.
            skipIfNewerThanMs: interval / 2,
            waitForLockMs: 0,
          },
          (worker) => {
            thread = worker
          },
        )
        if (outcome.written) {
          const { path, manifest, bytes, seconds, removed } = outcome.written
          duration.set(seconds)
          app.log.info(
            { backup: path, leads: manifest.counts.leads ?? 0, clients: manifest.counts.clients ?? 0, bytes, seconds, removed },
            'scheduled backup written',
          )
        } else {
          app.log.debug({ reason: outcome.skipped }, 'scheduled backup skipped')
        }
      } catch (err) {
        if (closing) return
        failed = true
        failures.inc()
        app.log.warn(
          { err: { message: (err as Error).message }, backup_dir: dir, retry_in_seconds: Math.min(interval, RETRY_MS) / 1000 },
          'scheduled backup failed',
        )
      } finally {
        thread = undefined
      }
      schedule(failed)
    }

    app.addHook('onReady', async () => schedule(false))
    app.addHook('onClose', async () => {
      closing = true
      clearTimeout(timer)
      // A backup being written is abandoned: it is a `.partial` folder, removed by the next one.
      await thread?.terminate()
    })
  },
  { name: 'backup', fastify: '5.x', dependencies: ['store', 'metrics'] },
)
