// The scale-out mode's outage: getProjects and anonymous submitLead at once under load while Redis
// is frozen (SIGSTOP) or killed then restarted, against the same load without an outage; and the
// server's own log of the requests it was slow to answer, during the outage and outside it.
import { randomBytes } from 'node:crypto'
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { apiEnv, PROBE, RATE_LIMITS, token } from '../../lib/api.js'
import { fmt } from '../../lib/format.js'
import { log } from '../../lib/log.js'
import { benchDir } from '../../lib/paths.js'
import { freePort, sleep, startServer, stopServer } from '../../lib/processes.js'
import type { Figures, Load, Options, Server, Target } from '../../lib/types.js'
import { runWrk } from '../../lib/wrk.js'
import { metric, type RedisServer } from './redis.js'

/** A server's log from byte `from` on (the bench's servers log JSON lines). */
function logLinesFrom(file: string, from: number): Record<string, unknown>[] {
  const fd = openSync(file, 'r')
  try {
    const buffer = Buffer.alloc(fstatSync(fd).size - from)
    readSync(fd, buffer, 0, buffer.length, from)
    return buffer
      .toString('utf8')
      .split('\n')
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>]
        } catch {
          return [] // not a log line (a line cut short, something the process printed)
        }
      })
  } finally {
    closeSync(fd)
  }
}

/**
 * The requests the server itself took over 50 ms for (its request log's `ms`), split by whether
 * they overlapped the outage (from its start to 2 s after Redis was back, the time to rejoin) or
 * not: a slow response outside it is not Redis' doing (a batch's commit, a pause of the machine).
 */
function slowRequests(file: string, from: number, window: { from: number; to: number }) {
  const slow = logLinesFrom(file, from).filter((o) => o.msg === 'request' && typeof o.ms === 'number' && o.ms > 50)
  const out = { duringOrJustAfter: 0, outside: 0, slowestDuringMs: 0, slowestOutsideMs: 0 }
  for (const o of slow) {
    const end = o.time as number
    const ms = o.ms as number
    if (end >= window.from && end - ms <= window.to + 2000) {
      out.duringOrJustAfter++
      out.slowestDuringMs = Math.max(out.slowestDuringMs, ms)
    } else {
      out.outside++
      out.slowestOutsideMs = Math.max(out.slowestOutsideMs, ms)
    }
  }
  return out
}

/**
 * getProjects and anonymous submitLead at once (4 connections each) for 15 s; Redis frozen or
 * killed from 5 s to 10 s.
 * Anonymous leads are a security budget (raised out of the way here): every one of them waits for
 * Redis to count it, the worst case for a request's latency when Redis is in trouble.
 */
export async function outage(
  options: Options,
  redis: RedisServer,
  databaseUrl: string,
  tmp: string,
  servers: (Server | undefined)[],
  targets: Target[],
) {
  const port = await freePort()
  const metricsPort = await freePort()
  const env = apiEnv(port, join(tmp, 'outage-data'), {
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    REDIS_PREFIX: `bench-outage-${randomBytes(2).toString('hex')}:`,
    METRICS_PORT: String(metricsPort),
    LEADS_ALLOW_ANONYMOUS: 'true',
    RATE_LIMITS: `${RATE_LIMITS}, submitLeadAnonymous=100000000`,
  })
  const logFile = join(benchDir, 'api-outage.log')
  const server = await startServer({
    name: 'outage',
    nodeArgs: [options.serverJs],
    env: { ...env, ...options.childEnv },
    port,
    logFile,
    probe: PROBE,
  })
  servers.push(server)
  const bearer = `Bearer ${await token(port)}`
  const projects: Load = { script: 'get', path: '/project_metadata.json', authorization: bearer }
  const leads: Load = { script: 'submit-lead', path: '/scripts/enquiry_backend.php', consent: true }
  await runWrk(server, projects, options.warmup, options.connections)
  await runWrk(server, leads, options.warmup, options.connections)
  const SECONDS = 15
  const waitedOver = async (seconds: number) => {
    const n = (await metric(metricsPort, 'studio_rate_limit_redis_wait_seconds_count')) || 0
    return n - ((await metric(metricsPort, 'studio_rate_limit_redis_wait_seconds_bucket', `le="${seconds}"`)) || 0)
  }
  const scenario = async (name: string, from: () => unknown, to: () => unknown) => {
    const orZero = (x: number) => (Number.isNaN(x) ? 0 : x)
    const m = async () => ({
      answered: orZero(await metric(metricsPort, 'studio_rate_limit_redis_wait_seconds_count', 'outcome="answered"')),
      timedOut: orZero(await metric(metricsPort, 'studio_rate_limit_redis_wait_seconds_count', 'outcome="timed_out"')),
      // Requests that waited longer than 50 ms for Redis (answered or not): all but the 50 ms bucket.
      over50: await waitedOver(0.05),
      fallbacks: await metric(metricsPort, 'studio_rate_limit_local_fallbacks_total'),
      // The server's own count of its answers: wrk counts every status over 399 alike.
      status5xx: orZero(await metric(metricsPort, 'studio_http_requests_total', 'status="5')),
      status429: orZero(await metric(metricsPort, 'studio_http_requests_total', 'status="429"')),
    })
    const before = await m()
    const logFrom = statSync(logFile).size
    const window = { from: Number.NaN, to: Number.NaN }
    const timers = [
      setTimeout(() => {
        window.from = Date.now()
        from()
      }, 5000),
      setTimeout(() => {
        window.to = Date.now()
        to()
      }, 10_000),
    ]
    // Few connections, so the server is not saturated and a request's latency is its own work,
    // not a queue: what Redis adds shows.
    const [p, l] = await Promise.all([runWrk(server, projects, SECONDS, 4), runWrk(server, leads, SECONDS, 4)])
    for (const timer of timers) clearTimeout(timer)
    await sleep(2000)
    const after = await m()
    const shared = await metric(metricsPort, 'studio_rate_limit_shared')
    const row = {
      getProjects: pick(p),
      anonymousLeads: pick(l),
      waitsAnswered: after.answered - before.answered,
      waitsTimedOut: after.timedOut - before.timedOut,
      waitsOver50Ms: after.over50 - before.over50,
      status5xx: after.status5xx - before.status5xx,
      status429: after.status429 - before.status429,
      localFallbacks: after.fallbacks - before.fallbacks,
      sharedAfter: shared,
      slowRequests: slowRequests(logFile, logFrom, window),
    }
    log(`outage ${name}: ${JSON.stringify(row)}`)
    return row
  }
  const pick = (f: Figures) => ({
    requests: f.requests,
    non2xx: f.non2xx,
    socketErrors: f.socketErrors,
    rps: Math.round(f.rps),
    p50Ms: f.p50Us / 1000,
    p99Ms: f.p99Us / 1000,
    maxMs: f.maxUs / 1000,
  })
  const control = await scenario(
    'none (control)',
    () => {},
    () => {},
  )
  const frozen = await scenario(
    'SIGSTOP 5 s',
    () => redis.freeze(),
    () => redis.thaw(),
  )
  const killed = await scenario(
    'killed, restarted after 5 s',
    () => redis.kill(),
    () => redis.start(),
  )
  await stopServer(server)
  for (const [name, row] of [
    ['frozen', frozen],
    ['killed', killed],
  ] as const) {
    const socketErrors = row.getProjects.socketErrors + row.anonymousLeads.socketErrors
    const worst = Math.max(row.getProjects.maxMs, row.anonymousLeads.maxMs)
    const controlWorst = Math.max(control.getProjects.maxMs, control.anonymousLeads.maxMs)
    targets.push({
      name: `Redis ${name} 5 s under load (slowest response without an outage: ${fmt(controlWorst, 1)} ms)`,
      target: 'no 5xx or socket error; no request waited for Redis over 50 ms; shared again after',
      value: `${row.status5xx} 5xx, ${socketErrors} socket errors, ${row.status429} 429; ${row.waitsOver50Ms} waited over 50 ms (${row.waitsTimedOut} gave up waiting at REDIS_WAIT_MS); slowest response ${fmt(worst, 1)} ms; over 50 ms by the server's log: ${row.slowRequests.duringOrJustAfter} during the outage or the 2 s after it${row.slowRequests.duringOrJustAfter ? ` (slowest ${fmt(row.slowRequests.slowestDuringMs, 1)} ms)` : ''}, ${row.slowRequests.outside} outside it${row.slowRequests.outside ? ` (slowest ${fmt(row.slowRequests.slowestOutsideMs, 1)} ms)` : ''}; counted locally ${row.localFallbacks}×, shared again after: ${row.sharedAfter === 1 ? 'yes' : 'no'}`,
      pass: row.status5xx === 0 && socketErrors === 0 && row.waitsOver50Ms === 0 && row.sharedAfter === 1,
    })
  }
  return { seconds: SECONDS, outageFromS: 5, outageToS: 10, control, frozen, killed }
}
