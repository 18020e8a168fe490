// The ablation's measurements: each figure on the control build and on the stock builds that can
// move it, side by side in the same rounds. Every figure leaves per-round samples by build (the
// table is read from them, report.ts); the load figures leave their operation's results too.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import pg from 'pg'
import { BASIC, startApi, token } from '../../lib/api.js'
import { compare } from '../../lib/compare.js'
import { fmt, mb } from '../../lib/format.js'
import { buildFsyncShim } from '../../lib/fsync-shim.js'
import { log } from '../../lib/log.js'
import { idleRss } from '../../lib/measure.js'
import { benchDir } from '../../lib/paths.js'
import { freePort, sleep, stopServer } from '../../lib/processes.js'
import type { Contender, Load, OpResult, Options, Server } from '../../lib/types.js'
import { runWrk } from '../../lib/wrk.js'
import type { Copy } from './copies.js'
import type { Figure } from './internals.js'
import { firstAndSecondStart } from './npm-start.js'

/** Per figure, per build (control or an internal's name), per metric: one value per round. */
export type Samples = Partial<Record<Figure, Record<string, Record<string, number[]>>>>

/** The subject of every comparison: the build as it is. */
export const CONTROL = 'control'

function record(samples: Samples, figure: Figure, build: string, metric: string, value: number): void {
  const byBuild = samples[figure] ?? {}
  samples[figure] = byBuild
  const byMetric = byBuild[build] ?? {}
  byBuild[build] = byMetric
  byMetric[metric] = [...(byMetric[metric] ?? []), value]
}

/** The builds in the order of round `round` (from 1): each round starts one build further on. */
const inTurn = <T>(builds: T[], round: number): T[] => builds.map((_, j) => builds[(j + round - 1) % builds.length] as T)

/** An operation's rounds as samples: req/s, server CPU per request, p99. */
function fromOp(samples: Samples, figure: Figure, op: OpResult): void {
  for (const [build, summary] of Object.entries(op.servers)) {
    for (const f of summary.rounds) {
      record(samples, figure, build, 'rps', f.rps)
      record(samples, figure, build, 'cpuUsPerReq', f.cpuUsPerReq)
      record(samples, figure, build, 'p99Us', f.p99Us)
    }
  }
}

/** An API of each build, started from its copy's bundle. */
async function startApis(
  options: Options,
  tmp: string,
  copies: Copy[],
  label: string,
  extra: (c: Copy) => Promise<Record<string, string>>,
) {
  const apis: { copy: Copy; server: Server; bearer: string }[] = []
  for (const copy of copies) {
    const port = await freePort()
    const server = await startApi(
      options,
      `${label}-${copy.name}`,
      join(tmp, `${label}-${copy.name}-data`),
      port,
      join(benchDir, `api-ablation-${copy.name}.log`),
      {
        script: copy.bundle,
        extra: await extra(copy),
      },
    )
    apis.push({ copy, server, bearer: `Bearer ${await token(port)}` })
  }
  return apis
}

/**
 * getProjects, issueToken and submitLead on SQLite, in this order, each with the control and the
 * builds whose internal can move it (`who`): one API per build, fresh data folder.
 */
export async function sqliteFigures(
  options: Options,
  tmp: string,
  control: Copy,
  who: (figure: Figure) => Copy[],
  samples: Samples,
  ops: Record<string, OpResult>,
): Promise<void> {
  const figures = (['getProjects', 'issueToken', 'submitLead'] as const).filter((f) => options.only.has(f) && who(f).length > 0)
  if (figures.length === 0) return
  const builds = [control, ...new Set(figures.flatMap(who))]
  const apis = await startApis(options, tmp, builds, 'sqlite', async () => ({}))
  try {
    const loads: Record<(typeof figures)[number], (bearer: string) => Load> = {
      getProjects: (bearer) => ({ script: 'get', path: '/project_metadata.json', authorization: bearer }),
      issueToken: () => ({ script: 'issue-token', path: '/api/token', authorization: BASIC }),
      submitLead: (bearer) => ({ script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: bearer }),
    }
    for (const figure of figures) {
      const names = new Set([CONTROL, ...who(figure).map((c) => c.name)])
      const contenders: Contender[] = apis
        .filter((a) => names.has(a.copy.name))
        .map((a) => ({ name: a.copy.name, server: a.server, load: loads[figure](a.bearer) }))
      const op = await compare(options, figure, contenders, { rotate: true })
      ops[figure] = op
      fromOp(samples, figure, op)
    }
  } finally {
    await Promise.all(apis.map((a) => stopServer(a.server)))
  }
}

/** What the fsync shim adds to every fsync of the flood figure's servers, µs: a disk slower than this machine's. */
export const FLOOD_FSYNC_DELAY_US = 2000

/**
 * Reads while leads are stored, on a disk whose fsync is slower (every fsync FLOOD_FSYNC_DELAY_US
 * longer, bench/fsync-delay.c preloaded into each API): each round, each build in turn on a fresh
 * data folder, getProjects at 4 connections while --connections submit unique leads, started
 * first and ended last (as bench/mixed-load.sh does by hand). A commit that holds the event loop
 * for its fsync shows here: every read waits behind it.
 */
export async function floodFigure(options: Options, tmp: string, control: Copy, stock: Copy[], samples: Samples): Promise<void> {
  if (!options.only.has('readsDuringFlood') || stock.length === 0) return
  const shim = buildFsyncShim(tmp)
  const preload = async () => ({ LD_PRELOAD: shim, FSYNC_DELAY_US: String(FLOOD_FSYNC_DELAY_US) })
  for (let round = 1; round <= options.rounds; round++) {
    const apis = await startApis(options, tmp, inTurn([control, ...stock], round), `flood-${round}`, preload)
    try {
      for (const { copy, server, bearer } of apis) {
        const lead: Load = { script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: bearer }
        const flood = runWrk(server, lead, options.duration + 3, options.connections)
        await sleep(1500)
        const reads = await runWrk(server, { script: 'get', path: '/project_metadata.json', authorization: bearer }, options.duration, 4)
        const leads = await flood
        record(samples, 'readsDuringFlood', copy.name, 'rps', reads.rps)
        record(samples, 'readsDuringFlood', copy.name, 'p99Us', reads.p99Us)
        record(samples, 'readsDuringFlood', copy.name, 'floodRps', leads.rps)
        log(
          `readsDuringFlood round ${round}/${options.rounds} ${copy.name}: getProjects ${fmt(reads.rps)} req/s, p99 ${fmt(reads.p99Us / 1000, 2)} ms; the flood ${fmt(leads.rps)} leads/s`,
        )
      }
    } finally {
      await Promise.all(apis.map((a) => stopServer(a.server)))
    }
  }
}

/** submitLead on PostgreSQL: a database of its own per build, on --database (else DATABASE_URL, else the local test server). */
export async function postgresFigure(
  options: Options,
  tmp: string,
  control: Copy,
  stock: Copy[],
  samples: Samples,
  ops: Record<string, OpResult>,
): Promise<void> {
  if (!options.only.has('submitLeadPostgres') || stock.length === 0) return
  const base = options.args.get('database') ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const admin = new pg.Client({ connectionString: base })
  await admin.connect()
  const tag = randomBytes(3).toString('hex')
  const databases: string[] = []
  let apis: Awaited<ReturnType<typeof startApis>> = []
  try {
    apis = await startApis(options, tmp, [control, ...stock], 'pg', async (copy) => {
      const db = `studio_bench_${tag}_${copy.name.replaceAll('-', '_')}`
      await admin.query(`create database ${db}`)
      databases.push(db)
      const url = new URL(base)
      url.pathname = `/${db}`
      return { DATABASE_URL: url.toString() }
    })
    log(`submitLeadPostgres: databases on ${new URL(base).host}`)
    const op = await compare(
      options,
      'submitLeadPostgres',
      apis.map((a) => ({
        name: a.copy.name,
        server: a.server,
        load: { script: 'submit-lead', path: '/scripts/enquiry_backend.php', authorization: a.bearer },
      })),
      { rotate: true },
    )
    ops.submitLeadPostgres = op
    fromOp(samples, 'submitLeadPostgres', op)
  } finally {
    await Promise.all(apis.map((a) => stopServer(a.server)))
    for (const db of databases) await admin.query(`drop database if exists ${db} with (force)`).catch(() => {})
    await admin.end()
  }
}

/**
 * Start-up and idle RSS, each round: every build started in turn on a fresh data folder (spawn to
 * first answered request, the others idle meanwhile; each round begins with another build), then
 * their idle RSS read side by side (2 s after start-up, and once V8 has settled: up to 60 s).
 */
export async function startupFigure(options: Options, tmp: string, control: Copy, stock: Copy[], samples: Samples): Promise<void> {
  if (!options.only.has('startup') || stock.length === 0) return
  for (let round = 1; round <= options.rounds; round++) {
    const started: { copy: Copy; server: Server }[] = []
    try {
      for (const copy of inTurn([control, ...stock], round)) {
        const port = await freePort()
        const dataDir = join(tmp, `startup-${round}-${copy.name}`)
        const server = await startApi(options, `startup-${copy.name}`, dataDir, port, join(benchDir, `api-ablation-${copy.name}.log`), {
          script: copy.bundle,
          append: true,
        })
        started.push({ copy, server })
        record(samples, 'startup', copy.name, 'firstAnswerMs', server.startupMs)
      }
      const rss = await Promise.all(started.map((s) => idleRss(s.server.pid)))
      for (const [i, s] of started.entries()) {
        record(samples, 'startup', s.copy.name, 'idleRssSettledMB', mb(rss[i]?.settled ?? Number.NaN))
        record(samples, 'startup', s.copy.name, 'idleRssEarlyMB', mb(rss[i]?.early ?? Number.NaN))
      }
      log(
        `startup round ${round}/${options.rounds}: ${started.map((s, i) => `${s.copy.name} ${fmt(s.server.startupMs)} ms, ${mb(rss[i]?.settled ?? Number.NaN)} MB`).join('; ')}`,
      )
    } finally {
      await Promise.all(started.map((s) => stopServer(s.server)))
    }
  }
}

/** `npm start`, first (no dist/) and second start, each round, for the control and the stock builds. */
export async function npmStartFigure(options: Options, tmp: string, control: Copy, stock: Copy[], samples: Samples): Promise<void> {
  if (!options.only.has('npmStart') || stock.length === 0) return
  for (let round = 1; round <= options.rounds; round++) {
    for (const copy of inTurn([control, ...stock], round)) {
      const logFile = join(benchDir, `npm-start-ablation-${copy.name}.log`)
      const { firstMs, secondMs } = await firstAndSecondStart(copy, join(tmp, `npm-start-${round}-${copy.name}`), logFile)
      record(samples, 'npmStart', copy.name, 'firstStartMs', firstMs)
      record(samples, 'npmStart', copy.name, 'secondStartMs', secondMs)
      log(
        `npmStart round ${round}/${options.rounds} ${copy.name}: first start ${fmt(firstMs / 1000, 1)} s, second ${fmt(secondMs / 1000, 1)} s`,
      )
    }
  }
}
