// The scale-out mode's targets and its tables.
import * as os from 'node:os'
import { clean } from '../../lib/compare.js'
import { columns, fmt, ms } from '../../lib/format.js'
import type { OpResult, Summary, Target } from '../../lib/types.js'
import { type CommitLatency, PG_XACTS, WAL_BYTES } from './postgres.js'

/** What the rate limiter did per response over an operation's runs (the server's metrics). */
export interface Meter {
  requests: number
  redisCalls: number
}

/** The CPU the rest of the machine (every process but the server and wrk) spent per response, µs. */
export const othersUsPerReq = (s: Summary) => (s.otherCores / s.rps) * 1e6

export function sideBySideTargets(ops: Record<string, OpResult>, latency: CommitLatency | undefined, flushDelayUs: number): Target[] {
  const out: Target[] = []
  const g = ops.getProjects
  if (g) {
    const vs = g.vs.embedded?.rps ?? Number.NaN
    const redis = g.servers.redis
    out.push(
      {
        name: 'getProjects with REDIS_URL ÷ without (same build)',
        target: '>= 0.85x',
        value: `${fmt(vs, 2)}x (${fmt(redis?.rps ?? Number.NaN)} vs ${fmt(g.servers.embedded?.rps ?? Number.NaN)} req/s)`,
        pass: vs >= 0.85 && clean(redis) && clean(g.servers.embedded),
      },
      {
        name: 'getProjects with REDIS_URL: p99',
        target: '< 10 ms',
        value: `${ms(redis?.p99Us ?? Number.NaN)} ms`,
        pass: (redis?.p99Us ?? Number.POSITIVE_INFINITY) < 10_000 && clean(redis),
      },
    )
  }
  const s = ops.submitLead
  if (s) {
    const vs = s.vs['naive-pg']?.rps ?? Number.NaN
    out.push({
      name: `submitLead on PostgreSQL ÷ naive (one transaction per lead)${flushDelayUs ? `, every WAL flush +${flushDelayUs} µs (the shim)` : ''}`,
      target: '>= 1.5x',
      value: `${fmt(vs, 2)}x (${fmt(s.servers['pg+redis']?.rps ?? Number.NaN)} vs ${fmt(s.servers['naive-pg']?.rps ?? Number.NaN)} req/s)`,
      pass: vs >= 1.5 && clean(s.servers['pg+redis']) && clean(s.servers['naive-pg']),
    })
    // What 1.5× would take of this machine: the API's own CPU per lead that one event loop could
    // afford at 1.5× the naive endpoint's rate, and every process's CPU per lead at that rate.
    const api = s.servers['pg+redis']
    const naive = s.servers['naive-pg']
    if (api && naive) {
      const goal = 1.5 * naive.rps
      const cores = (goal * (api.cpuUsPerReq + othersUsPerReq(api) + api.wrkCpuUsPerReq)) / 1e6
      out.push({
        name: 'submitLead: what 1.5x the naive endpoint would take here',
        target: 'information',
        value:
          `${fmt(goal)} leads/s: at most ${fmt(1e6 / goal, 1)} µs of the API's CPU per lead on one core ` +
          `(it spent ${fmt(api.cpuUsPerReq, 1)}, the naive endpoint ${fmt(naive.cpuUsPerReq, 1)}); ` +
          `${fmt(cores, 2)} of ${os.cpus().length} cores at this run's CPU per lead (API, rest of the machine, wrk); ` +
          `a commit in series ${latency ? fmt(latency.medianUs) : '-'} µs`,
        pass: null,
      })
    }
  }
  return out
}

export function printTables(
  ops: Record<string, OpResult>,
  meters: Record<string, Record<string, Meter>>,
  results: Record<string, unknown>,
  targets: Target[],
): void {
  const rows = [
    [
      'operation',
      'server',
      'req/s',
      'first÷',
      'µs CPU/req',
      'others µs/req',
      'redis µs/req',
      'redis calls/req',
      'pg xacts/req',
      'wal B/req',
      'p50 ms',
      'p99 ms',
      'max ms',
      'errors',
    ],
  ]
  for (const [op, r] of Object.entries(ops)) {
    for (const [name, s] of Object.entries(r.servers)) {
      const m = meters[op]?.[name]
      rows.push([
        op,
        name,
        fmt(s.rps),
        r.vs[name] ? `${fmt(r.vs[name].rps, 2)}x` : '',
        fmt(s.cpuUsPerReq, 1),
        fmt(othersUsPerReq(s), 1),
        fmt(s.watchedCpuUsPerReq, 1),
        m ? fmt(m.redisCalls, 4) : '',
        s.counted[PG_XACTS] === undefined ? '' : fmt(s.counted[PG_XACTS], 3),
        s.counted[WAL_BYTES] === undefined ? '' : fmt(s.counted[WAL_BYTES]),
        ms(s.p50Us),
        ms(s.p99Us),
        ms(s.maxUs, 1),
        String(s.non2xx + s.socketErrors),
      ])
    }
  }
  const out = ['', 'Scale-out: the same build embedded, with Redis, with PostgreSQL + Redis (medians of the rounds)', '']
  out.push(...columns(rows))
  const two = results.twoInstances as { throughput: Record<string, number> } | undefined
  if (two) {
    const { aloneRps, aloneCpuUsPerReq, bothRps, bothCpuUsPerReq, bothP99Ms, errors } = two.throughput
    out.push(
      '',
      `two instances, getProjects: one alone ${fmt(aloneRps ?? 0)} req/s (${fmt(aloneCpuUsPerReq ?? 0, 1)} µs CPU/req); both at once ${fmt(bothRps ?? 0)} req/s (${fmt(bothCpuUsPerReq ?? 0, 1)} µs CPU/req, p99 ${fmt(bothP99Ms ?? 0, 2)} ms); errors ${errors}`,
    )
  }
  const outage = results.outage as Record<string, unknown> | undefined
  if (outage) for (const k of ['control', 'frozen', 'killed']) out.push(`outage ${k}: ${JSON.stringify(outage[k])}`)
  out.push('')
  for (const t of targets) out.push(`${t.pass === null ? ' -- ' : t.pass ? 'PASS' : 'FAIL'}  ${t.name}: ${t.value}  (target ${t.target})`)
  out.push('')
  process.stdout.write(`${out.join('\n')}\n`)
}
