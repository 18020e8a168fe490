// The default run's memory part: a separate API on a big lead log (100,000 leads by default,
// --leads), the whole log fetched with GET /leads.json while its RSS is sampled every 20 ms.
import * as http from 'node:http'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { CLIENT_ID, seedLeadLog, startApi, token } from '../../lib/api.js'
import { fmt, MB, mb } from '../../lib/format.js'
import { log } from '../../lib/log.js'
import { idleRss, rssOf } from '../../lib/measure.js'
import { benchDir } from '../../lib/paths.js'
import { freePort, request, sleep, stopServer } from '../../lib/processes.js'
import type { Options, Target } from '../../lib/types.js'

interface Fetched {
  bytes: number
  ms: number
  status: number
}

export async function memoryRun(options: Options, tmp: string, targets: Target[]) {
  const leadCount = options.leads
  const dataDir = join(tmp, 'memory-data')
  const logFile = join(benchDir, 'api-memory.log')
  const port = await freePort()
  log(`memory run: storing ${leadCount} leads through the store (migrations first)`)
  await seedLeadLog(dataDir, leadCount, { name: 'Memory Lead', emailPrefix: 'memory.lead', clientId: CLIENT_ID })

  const api = await startApi(options, 'api-memory', dataDir, port, logFile, { append: true })
  log(`memory run: restarted on ${leadCount} leads, first answered request after ${fmt(api.startupMs)} ms`)
  try {
    const bearer = await token(port)
    // The baseline is the settled idle RSS: measured 2 s after start-up, the start-up heap V8 has
    // not yet given back would absorb (and hide) the growth.
    log('memory run: waiting for idle RSS to settle (up to 60 s)')
    const idle = await idleRss(api.pid)
    const baselineRss = idle.settled

    const samples: { t: number; rss: number }[] = []
    const sampler = setInterval(() => {
      try {
        samples.push({ t: performance.now(), rss: rssOf(api.pid) })
      } catch {
        /* the process is gone */
      }
    }, 20)

    const fetchLog = (): Promise<Fetched> =>
      new Promise((ok, fail) => {
        const started = performance.now()
        const req = http.get(
          { host: '127.0.0.1', port, path: '/leads.json', headers: { authorization: `Bearer ${bearer}` }, agent: false },
          (res) => {
            let bytes = 0
            res.on('data', (c: Buffer) => {
              bytes += c.length
            })
            res.on('end', () => ok({ bytes, ms: performance.now() - started, status: res.statusCode ?? 0 }))
            res.on('error', fail)
          },
        )
        req.on('error', fail)
      })

    const phases: { phase: string; requests: Fetched[]; peakRss: number }[] = []
    const phase = async (name: string, fn: () => Promise<Fetched[]>) => {
      const from = performance.now()
      const requests = await fn()
      await sleep(100)
      const peak = Math.max(...samples.filter((s) => s.t >= from).map((s) => s.rss))
      phases.push({ phase: name, requests, peakRss: peak })
      const bad = requests.filter((r) => r.status !== 200)
      if (bad.length) throw new Error(`memory run: GET /leads.json answered ${bad.map((r) => r.status).join(', ')}`)
      log(
        `memory run: ${name}: ${requests.length} × ${mb(requests[0]?.bytes ?? 0)} MB in ${requests.map((r) => fmt(r.ms)).join(', ')} ms; peak RSS ${mb(peak)} MB`,
      )
    }

    try {
      await phase('sequential', async () => {
        const out = []
        for (let i = 0; i < 3; i++) out.push(await fetchLog())
        return out
      })
      await phase('4 concurrent', async () => {
        const out = []
        for (let i = 0; i < 2; i++) out.push(...(await Promise.all([fetchLog(), fetchLog(), fetchLog(), fetchLog()])))
        return out
      })
    } finally {
      clearInterval(sampler)
    }
    const afterRss = rssOf(api.pid)
    // Check once that the whole log comes back (parsed after sampling, so it cannot skew it).
    const check = (await request(port, { path: '/leads.json', headers: { authorization: `Bearer ${bearer}` } })).body
    const entries = (JSON.parse(check.toString()) as unknown[]).length
    if (entries !== leadCount) throw new Error(`memory run: expected ${leadCount} leads, got ${entries}`)

    const peakRss = Math.max(...samples.map((s) => s.rss))
    const growth = peakRss - baselineRss
    log(`memory run: baseline RSS ${mb(baselineRss)} MB, peak ${mb(peakRss)} MB, growth ${mb(growth)} MB (${samples.length} samples)`)
    targets.push({
      name: `getLeads ${leadCount} leads streamed: RSS growth`,
      target: '< 64 MB',
      value: `${mb(growth)} MB`,
      pass: growth < 64 * MB,
    })
    return {
      leads: leadCount,
      responseBytes: check.length,
      entriesChecked: entries,
      restartFirstAnswerMs: api.startupMs,
      baselineRssMB: mb(baselineRss),
      earlyIdleRssMB: mb(idle.early),
      peakRssMB: mb(peakRss),
      peakGrowthMB: mb(growth),
      rssAfterMB: mb(afterRss),
      samples: samples.length,
      phases: phases.map((p) => ({
        phase: p.phase,
        peakRssMB: mb(p.peakRss),
        requestMs: p.requests.map((r) => Math.round(r.ms)),
        bytes: p.requests[0]?.bytes,
      })),
    }
  } finally {
    await stopServer(api)
  }
}
