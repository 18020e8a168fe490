// Operations: health, readiness, Prometheus metrics (on a listener of their own, never on the
// API's port), and the answer while shutting down.
import { networkInterfaces } from 'node:os'
import t from 'tap'
import { testdir } from '../helpers/folders.js'
import { freePort, startServer } from '../helpers/processes.js'

t.test('the metrics listener: its own port, on 127.0.0.1 by default; nothing else there', async (t) => {
  const metricsPort = await freePort()
  const server = await startServer(t, { METRICS_PORT: String(metricsPort), DATA_DIR: testdir(t, {}) })
  const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  t.equal(scraped.status, 200)
  t.match(await scraped.text(), /studio_process_resident_memory_bytes \d+/)
  const onApi = await fetch(`${server.url}/metrics`)
  t.equal(onApi.status, 404, 'the API port does not serve them')
  const ready = await fetch(`http://127.0.0.1:${metricsPort}/readyz`)
  t.equal(ready.status, 200)
  t.same(
    await ready.json(),
    { status: 'ready', storage: 'sqlite', storage_state: 'ok', redis: 'not configured', closing: false },
    "the metrics listener's /readyz has the details the public one keeps to itself",
  )
  const publicReady = await fetch(`${server.url}/readyz`)
  t.same(await publicReady.json(), { status: 'ready' }, 'the API port says ready, no more')
  const elsewhere = await fetch(`http://127.0.0.1:${metricsPort}/leads.json`)
  t.equal(elsewhere.status, 404, 'the metrics port serves nothing but /metrics and /readyz')
  t.equal(((await elsewhere.json()) as { code: string }).code, 'not_found')
  const posted = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { method: 'POST' })
  t.equal(posted.status, 405)
  t.equal(posted.headers.get('allow'), 'GET, HEAD')
  // Bound to the loopback interface only: from another of this machine's addresses, nothing.
  const outside = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === 'IPv4' && !i.internal)?.address
  if (outside) {
    await t.rejects(fetch(`http://${outside}:${metricsPort}/metrics`), `not reachable on ${outside}`)
  }
  t.equal(await server.stop(), 0, 'stops cleanly, metrics listener included')
})
