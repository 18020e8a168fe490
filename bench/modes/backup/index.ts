// The backup mode (`npm run bench:backup`, that is `npm run bench -- --backup`), issue 19's: what a
// backup costs the leads coming in. submitLead latency with and without a backup running, on the
// bundle `npm start` runs, over a lead log big enough that a backup lasts (default 200,000 leads,
// about 60 MB).
//
// Each round measures, in turn, a fresh server process (warm-up, then the measured window) with:
//   none         no backup;
//   vacuum       backups back to back in a process of their own, `VACUUM INTO` (what
//                `npm run backup` does; loop.ts);
//   backup-api   the same with SQLite's online backup API in one step;
//   scheduled    the server's own scheduled backups back to back (BACKUP_INTERVAL_MINUTES=0.01:
//                each is due before the last has finished), on its worker thread; "backups
//                finished" counts those that started and were followed by another in the window.
// "Back to back" makes every measured window overlap backups from start to end: the worst case.
// Figures are medians of the rounds; the machine drifts, so compare rows of one run.
// Writes bench/results/backup.json.
import { type ChildProcess, spawn } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { stampTime } from '../../../features/backup/files.js'
import { seedLeadLog } from '../../lib/api.js'
import { build } from '../../lib/build.js'
import { log } from '../../lib/log.js'
import { median } from '../../lib/measure.js'
import { benchDir, root } from '../../lib/paths.js'
import { freePort, request, startServer, stopServer, track } from '../../lib/processes.js'
import { writeResults } from '../../lib/results.js'
import type { Figures, Options, Server } from '../../lib/types.js'
import { runWrk } from '../../lib/wrk.js'

const CLIENT_ID = 'cl_bench_backup'
const CLIENT_SECRET = randomBytes(32).toString('base64url')
/** One signing key and pepper for every server of the run: they all open the same database. */
const secrets = {
  JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  SECRET_PEPPER: randomBytes(32).toString('base64url'),
  BOOTSTRAP_CLIENT_ID: CLIENT_ID,
  BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
}

function startBackupServer(options: Options, dataDir: string, port: number, extra: Record<string, string>): Promise<Server> {
  return startServer({
    name: 'api-backup',
    nodeArgs: [options.serverJs],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...secrets,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      LOG_LEVEL: 'warn',
      PUBLIC_BASE_URL: 'http://127.0.0.1',
      RATE_LIMITS: 'submitLead=100000000, issueToken=100000',
      ...extra,
    },
    port,
    logFile: join(benchDir, 'api-backup.log'),
    probe: '/healthz',
    append: true,
  })
}

async function token(port: number): Promise<string> {
  const res = await request(port, {
    method: 'POST',
    path: '/api/token',
    headers: {
      authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=write:leads',
  })
  if (res.status !== 200) throw new Error(`token: ${res.status}`)
  return (JSON.parse(res.body.toString()) as { access_token: string }).access_token
}

type Config = 'none' | 'vacuum' | 'backup-api' | 'scheduled'
const CONFIGS: Config[] = ['none', 'vacuum', 'backup-api', 'scheduled']

export async function backupRun(options: Options): Promise<void> {
  const LEADS = options.leads
  const { duration, rounds, connections, warmup } = options
  build(options)
  const work = mkdtempSync(join(tmpdir(), 'studio-bench-backup-'))
  const dataDir = join(work, 'var')
  const backups = join(work, 'backups')
  try {
    const loadBefore = loadavg()
    log(`machine load average (1, 5, 15 min): ${loadBefore.map((l) => l.toFixed(1)).join(', ')}`)
    log(`seeding ${LEADS} leads`)
    await seedLeadLog(dataDir, LEADS, { name: 'Backup Bench Lead', emailPrefix: 'backup.bench', clientId: CLIENT_ID })
    const seededMB = Number((statSync(join(dataDir, 'studio.db')).size / 1e6).toFixed(1))
    log(`database: ${seededMB} MB (it grows by every lead the rounds submit)`)

    const results = new Map<Config, { figures: Figures[]; backups: number[]; backupMs: number[] }>(
      CONFIGS.map((c) => [c, { figures: [], backups: [], backupMs: [] }]),
    )
    for (let round = 1; round <= rounds; round++) {
      for (const config of CONFIGS) {
        const done: number[] = []
        // Same log level as the others (every request's line costs CPU); its backups are counted
        // from the folder (kept, all of them, until the end of the run).
        const scheduledDir = join(work, `scheduled-${round}`)
        const server = await startBackupServer(
          options,
          dataDir,
          await freePort(),
          config === 'scheduled' ? { BACKUP_DIR: scheduledDir, BACKUP_INTERVAL_MINUTES: '0.01', BACKUP_KEEP: '10000' } : {},
        )
        const load = {
          script: 'submit-lead',
          path: '/scripts/enquiry_backend.php',
          authorization: `Bearer ${await token(server.port)}`,
        } as const
        await runWrk(server, load, warmup, connections)
        let loop: ChildProcess | undefined
        if (config === 'vacuum' || config === 'backup-api') {
          loop = spawn(process.execPath, [join(root, 'dist', 'bench', 'modes', 'backup', 'loop.js'), dataDir, backups, config], {
            stdio: ['ignore', 'pipe', 'inherit'],
          })
          track(loop)
          loop.stdout?.setEncoding('utf8').on('data', (s: string) => {
            for (const l of s.split('\n').filter(Boolean)) done.push((JSON.parse(l) as { ms: number }).ms)
          })
          // The first backup under way before the window opens.
          await new Promise((r) => setTimeout(r, 300))
        }
        const opened = Date.now()
        const f = await runWrk(server, load, duration, connections)
        const closed = Date.now()
        if (loop && loop.exitCode === null) {
          const exited = once(loop, 'exit')
          loop.kill('SIGTERM')
          await exited
        }
        await stopServer(server)
        if (config === 'scheduled') {
          // Back to back: a backup took about the time from its start to the next one's.
          const starts = readdirSync(scheduledDir)
            .map((name) => stampTime(name, 'backup'))
            .filter((t): t is number => t !== undefined)
            .sort((a, b) => a - b)
          for (const [i, t] of starts.entries()) {
            const next = starts[i + 1]
            if (next !== undefined && t >= opened && next <= closed) done.push(next - t)
          }
          rmSync(scheduledDir, { recursive: true, force: true })
        }
        const r = results.get(config)
        r?.figures.push(f)
        r?.backups.push(done.length)
        r?.backupMs.push(...done)
        log(
          `round ${round}/${rounds} ${config.padEnd(10)} ${f.rps.toFixed(0)} leads/s, p50 ${(f.p50Us / 1000).toFixed(2)} ms, p99 ${(f.p99Us / 1000).toFixed(2)} ms, max ${(f.maxUs / 1000).toFixed(1)} ms, non-2xx ${f.non2xx}${config === 'none' ? '' : `, backups finished ${done.length}`}`,
        )
      }
    }

    const summary = CONFIGS.map((config) => {
      const r = results.get(config) as { figures: Figures[]; backups: number[]; backupMs: number[] }
      return {
        config,
        leadsPerSecond: Math.round(median(r.figures.map((f) => f.rps))),
        p50Ms: Number((median(r.figures.map((f) => f.p50Us)) / 1000).toFixed(2)),
        p99Ms: Number((median(r.figures.map((f) => f.p99Us)) / 1000).toFixed(2)),
        maxMs: Number((Math.max(...r.figures.map((f) => f.maxUs)) / 1000).toFixed(1)),
        non2xx: r.figures.reduce((a, f) => a + f.non2xx, 0),
        backupSecondsMedian: r.backupMs.length ? Number((median(r.backupMs) / 1000).toFixed(2)) : null,
      }
    })
    process.stdout.write('\n| backup during the window | leads/s | p50 | p99 | max | backup took (median) |\n|---|---|---|---|---|---|\n')
    for (const s of summary) {
      process.stdout.write(
        `| ${s.config} | ${s.leadsPerSecond} | ${s.p50Ms} ms | ${s.p99Ms} ms | ${s.maxMs} ms | ${s.backupSecondsMedian === null ? '–' : `${s.backupSecondsMedian} s`} |\n`,
      )
    }
    const date = new Date().toISOString()
    writeResults(
      options,
      {
        date,
        leads: LEADS,
        databaseMBAtStart: seededMB,
        databaseMBAtEnd: Number((statSync(join(dataDir, 'studio.db')).size / 1e6).toFixed(1)),
        durationS: duration,
        rounds,
        connections,
        cores: availableParallelism(),
        loadAverageBefore: loadBefore.map((l) => Number(l.toFixed(1))),
        loadAverageAfter: loadavg().map((l) => Number(l.toFixed(1))),
        summary,
      },
      date,
    )
    log(
      `load average now ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`,
    )
  } finally {
    if (options.keep) log(`kept ${work}`)
    else if (existsSync(work)) rmSync(work, { recursive: true, force: true })
  }
}
