// What a backup costs the leads coming in (issue 19), `npm run bench:backup`: submitLead latency
// with and without a backup running, on the bundle `npm start` runs, over a lead log big enough
// that a backup lasts (default 200,000 leads, about 60 MB).
//
// Each round measures, in turn, a fresh server process (warm-up, then the measured window) with:
//   none         no backup;
//   vacuum       backups back to back in a process of their own, `VACUUM INTO` (what
//                `npm run backup` does; bench/backup-loop.ts);
//   backup-api   the same with SQLite's online backup API in one step;
//   scheduled    the server's own scheduled backups back to back (BACKUP_INTERVAL_MINUTES=0.01:
//                each is due before the last has finished), on its worker thread; "backups
//                finished" counts those that started and were followed by another in the window.
// "Back to back" makes every measured window overlap backups from start to end: the worst case.
// Figures are medians of the rounds; the machine drifts, so compare rows of one run.
//
// Options: --leads=200000 --duration=8 (s) --rounds=3 --connections=32 --skip-build --keep
// Needs wrk (apt-get install wrk). Writes bench/backup-results.json.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stampTime } from '../features/backup/files.js'
import { freePort } from './free-port.js'

const args = new Map(
  process.argv.slice(2).map((a) => {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a)
    if (!m?.[1]) throw new Error(`unknown argument ${a}`)
    return [m[1], m[2] ?? 'true'] as const
  }),
)
const num = (name: string, dflt: number) => {
  const v = Number(args.get(name) ?? dflt)
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} must be a positive whole number`)
  return v
}
const LEADS = num('leads', 200_000)
const DURATION = num('duration', 8)
const ROUNDS = num('rounds', 3)
const CONNECTIONS = num('connections', 32)
const WARMUP = 2

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..').replace(/[\\/]dist$/, '')
const wrkDir = join(root, 'bench', 'wrk')
const log = (s: string) => process.stderr.write(`bench:backup: ${s}\n`)

if (spawnSync('wrk', ['--version']).error) {
  log("wrk not found; install Debian's wrk (apt-get install wrk)")
  process.exit(2)
}

const CLIENT_ID = 'cl_bench_backup'
const CLIENT_SECRET = randomBytes(32).toString('base64url')
const secrets = {
  JWT_PRIVATE_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
  SECRET_PEPPER: randomBytes(32).toString('base64url'),
  BOOTSTRAP_CLIENT_ID: CLIENT_ID,
  BOOTSTRAP_CLIENT_SECRET: CLIENT_SECRET,
}

interface Server {
  child: ChildProcess
  port: number
}

async function startServer(dataDir: string, extra: Record<string, string>): Promise<Server> {
  const port = await freePort()
  const child = spawn(process.execPath, [join(root, 'dist', 'server.bundle.js')], {
    cwd: root,
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
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  for (const deadline = Date.now() + 60_000; ; ) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`)
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return { child, port }
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error('server did not start within 60 s')
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  child.kill('SIGTERM')
  await exited
}

async function token(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/api/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${CLIENT_ID}:${CLIENT_SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=write:leads',
  })
  if (!res.ok) throw new Error(`token: ${res.status}`)
  return ((await res.json()) as { access_token: string }).access_token
}

interface Figures {
  rps: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  non2xx: number
}

let wrkRuns = 0
const tag = randomBytes(3).toString('hex')

async function wrk(port: number, auth: string, seconds: number): Promise<Figures> {
  const child = spawn(
    'wrk',
    [
      '-t1',
      `-c${CONNECTIONS}`,
      `-d${seconds}s`,
      '--timeout',
      '10s',
      '--latency',
      '-s',
      join(wrkDir, 'submit-lead.lua'),
      `http://127.0.0.1:${port}/scripts/enquiry_backend.php`,
    ],
    {
      env: {
        PATH: process.env.PATH,
        LUA_PATH: `${wrkDir}/?.lua;;`,
        BENCH_AUTHORIZATION: `Bearer ${auth}`,
        BENCH_LEAD_TAG: `${tag}-${++wrkRuns}`,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  )
  let out = ''
  child.stdout?.setEncoding('utf8').on('data', (s: string) => {
    out += s
  })
  await once(child, 'close')
  const line = out.split('\n').find((l) => l.startsWith('BENCH_WRK_JSON '))
  if (!line) throw new Error(`wrk failed: ${out}`)
  const r = JSON.parse(line.slice('BENCH_WRK_JSON '.length)) as {
    requests: number
    durationUs: number
    errors: { status: number }
    latencyUs: { p50: number; p99: number; max: number }
  }
  return {
    rps: (r.requests - r.errors.status) / (r.durationUs / 1e6),
    p50Ms: r.latencyUs.p50 / 1000,
    p99Ms: r.latencyUs.p99 / 1000,
    maxMs: r.latencyUs.max / 1000,
    non2xx: r.errors.status,
  }
}

/** The lead log, written through the store's own migrations and repository (as bench/run.ts does). */
async function seed(dataDir: string): Promise<void> {
  const [{ openStore }, { LeadsRepository }] = await Promise.all([
    import('../plugins/store/open.js'),
    import('../features/leads/repository.js'),
  ])
  const store = await openStore({ dataDir, databaseUrl: undefined, dbPoolMax: 1 })
  const leads = new LeadsRepository(store)
  try {
    const base = Date.now() - LEADS * 1000
    for (let from = 0; from < LEADS; from += 2000) {
      const batch = Array.from({ length: Math.min(2000, LEADS - from) }, (_, k) => {
        const i = from + k
        return {
          id: randomUUID(),
          fields: { name: `Backup Bench Lead ${i}`, email: `backup.bench.${i}@example.com`, phone: `+44 20 ${String(i).padStart(8, '0')}` },
          received_at: new Date(base + i * 1000).toISOString(),
          client_id: CLIENT_ID,
        }
      })
      await leads.insertBatch(batch, new Map(), new Date(0).toISOString())
    }
  } finally {
    await store.close()
  }
}

type Config = 'none' | 'vacuum' | 'backup-api' | 'scheduled'
const CONFIGS: Config[] = ['none', 'vacuum', 'backup-api', 'scheduled']

async function main(): Promise<void> {
  if (args.get('skip-build') !== 'true') {
    log('building (npm run build)')
    if (spawnSync('npm', ['run', '-s', 'build'], { cwd: root, stdio: 'inherit' }).status !== 0) throw new Error('build failed')
  }
  const work = mkdtempSync(join(tmpdir(), 'studio-bench-backup-'))
  const dataDir = join(work, 'var')
  const backups = join(work, 'backups')
  try {
    const loadBefore = loadavg()
    log(`machine load average (1, 5, 15 min): ${loadBefore.map((l) => l.toFixed(1)).join(', ')}`)
    log(`seeding ${LEADS} leads`)
    await seed(dataDir)
    const seededMB = Number((statSync(join(dataDir, 'studio.db')).size / 1e6).toFixed(1))
    log(`database: ${seededMB} MB (it grows by every lead the rounds submit)`)

    const results = new Map<Config, { figures: Figures[]; backups: number[]; backupMs: number[] }>(
      CONFIGS.map((c) => [c, { figures: [], backups: [], backupMs: [] }]),
    )
    for (let round = 1; round <= ROUNDS; round++) {
      for (const config of CONFIGS) {
        const done: number[] = []
        // Same log level as the others (every request's line costs CPU); its backups are counted
        // from the folder (kept, all of them, until the end of the run).
        const scheduledDir = join(work, `scheduled-${round}`)
        const server = await startServer(
          dataDir,
          config === 'scheduled' ? { BACKUP_DIR: scheduledDir, BACKUP_INTERVAL_MINUTES: '0.01', BACKUP_KEEP: '10000' } : {},
        )
        const auth = await token(server.port)
        await wrk(server.port, auth, WARMUP)
        let loop: ChildProcess | undefined
        if (config === 'vacuum' || config === 'backup-api') {
          loop = spawn(process.execPath, [join(root, 'dist', 'bench', 'backup-loop.js'), dataDir, backups, config], {
            stdio: ['ignore', 'pipe', 'inherit'],
          })
          loop.stdout?.setEncoding('utf8').on('data', (s: string) => {
            for (const l of s.split('\n').filter(Boolean)) done.push((JSON.parse(l) as { ms: number }).ms)
          })
          // The first backup under way before the window opens.
          await new Promise((r) => setTimeout(r, 300))
        }
        const opened = Date.now()
        const f = await wrk(server.port, auth, DURATION)
        const closed = Date.now()
        if (loop) await stop(loop)
        await stop(server.child)
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
          `round ${round}/${ROUNDS} ${config.padEnd(10)} ${f.rps.toFixed(0)} leads/s, p50 ${f.p50Ms.toFixed(2)} ms, p99 ${f.p99Ms.toFixed(2)} ms, max ${f.maxMs.toFixed(1)} ms, non-2xx ${f.non2xx}${config === 'none' ? '' : `, backups finished ${done.length}`}`,
        )
      }
    }

    const median = (xs: number[]) => {
      const s = [...xs].sort((a, b) => a - b)
      const m = Math.floor(s.length / 2)
      return s.length === 0 ? Number.NaN : s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
    }
    const summary = CONFIGS.map((config) => {
      const r = results.get(config) as { figures: Figures[]; backups: number[]; backupMs: number[] }
      return {
        config,
        leadsPerSecond: Math.round(median(r.figures.map((f) => f.rps))),
        p50Ms: Number(median(r.figures.map((f) => f.p50Ms)).toFixed(2)),
        p99Ms: Number(median(r.figures.map((f) => f.p99Ms)).toFixed(2)),
        maxMs: Number(Math.max(...r.figures.map((f) => f.maxMs)).toFixed(1)),
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
    const out = join(root, 'bench', 'backup-results.json')
    writeFileSync(
      out,
      `${JSON.stringify(
        {
          date: new Date().toISOString(),
          leads: LEADS,
          databaseMBAtStart: seededMB,
          databaseMBAtEnd: Number((statSync(join(dataDir, 'studio.db')).size / 1e6).toFixed(1)),
          durationS: DURATION,
          rounds: ROUNDS,
          connections: CONNECTIONS,
          cores: availableParallelism(),
          loadAverageBefore: loadBefore.map((l) => Number(l.toFixed(1))),
          loadAverageAfter: loadavg().map((l) => Number(l.toFixed(1))),
          summary,
        },
        null,
        2,
      )}\n`,
    )
    log(
      `wrote ${out}; load average now ${loadavg()
        .map((l) => l.toFixed(1))
        .join(', ')}`,
    )
  } finally {
    if (args.get('keep') === 'true') log(`kept ${work}`)
    else if (existsSync(work)) rmSync(work, { recursive: true, force: true })
  }
}

await main()
