import t from 'tap'
import { listenMetrics } from '../../plugins/metrics/listener.js'
import { basic, call, leadOf, newClient, testApp, tokenFor } from '../helpers/app.js'

t.test('/healthz and /readyz sit outside auth and rate limits', async (t) => {
  const { app } = await testApp(t)
  const live = await app.inject({ url: '/healthz' })
  t.equal(live.statusCode, 200)
  t.same(live.json(), { status: 'ok' })
  t.equal(live.headers['x-ratelimit-limit'], undefined, 'no rate limit on health checks')
  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 200)
  t.same(ready.json(), { status: 'ready' }, 'the public /readyz says ready, and nothing about the storage engine or Redis')
  t.same(
    await app.readiness(),
    { status: 'ready', storage: app.store.dialect, storage_state: 'ok', redis: app.redis ? 'ok' : 'not configured', closing: false },
    'the details are for the operator (the metrics listener)',
  )
})

t.test('/metrics counts requests, latency, rejections, leads and token outcomes', async (t) => {
  const { app } = await testApp(t, { rateLimits: { getProjects: { max: 2 } } })
  const { token } = await tokenFor(app, ['read:projects', 'write:leads'])
  const client = await newClient(app, ['read:projects'])
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  await app.inject({
    method: 'POST',
    url: '/api/token',
    headers: { ...form, authorization: basic(client.client_id, 'wrong') },
    payload: 'grant_type=client_credentials',
  })
  const auth = { authorization: `Bearer ${token}` }
  for (let i = 0; i < 3; i++) await app.inject({ url: '/project_metadata.json', headers: auth })
  await call(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: auth, payload: leadOf(1) })
  await app.inject({ url: '/no/such/path' })

  const listener = await listenMetrics(app.metrics.registry, '127.0.0.1', 0)
  t.teardown(() => listener.close())
  const res = await fetch(`http://127.0.0.1:${listener.port}/metrics`)
  t.equal(res.status, 200)
  t.match(res.headers.get('content-type'), /^text\/plain/)
  const text = await res.text()
  const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1])
  t.equal(value('studio_http_requests_total{operation="getProjects",status="200"}'), 2)
  t.equal(value('studio_http_requests_total{operation="getProjects",status="429"}'), 1)
  t.equal(value('studio_http_requests_total{operation="unmatched",status="404"}'), 1, 'unknown paths share one label')
  t.equal(value('studio_rate_limit_rejections_total{operation="getProjects"}'), 1)
  t.equal(value('studio_leads_stored_total'), 1)
  t.equal(value('studio_tokens_issued_total{outcome="issued"}'), 1)
  t.equal(value('studio_tokens_issued_total{outcome="invalid_client"}'), 1)
  t.equal(value('studio_http_request_duration_seconds_count{operation="getProjects",status="200"}'), 2)
  t.match(text, /studio_process_resident_memory_bytes \d+/, 'process metrics')
  t.notMatch(text, /no\/such\/path/, 'raw URLs never become labels')
})

t.test('/metrics is not served on the API port: a 404 like any unknown path', async (t) => {
  const { app } = await testApp(t)
  const res = await call(t, app, { url: '/metrics' })
  t.equal(res.statusCode, 404)
  t.equal(res.json().code, 'not_found')
  t.notMatch(res.body, /studio_/, 'no metric in the answer')
})

t.test('while closing, new requests get 503 service_unavailable in the Error shape', async (t) => {
  const { app } = await testApp(t)
  app.lifecycle.closing = true // what the preClose hook sets when app.close() starts
  const res = await call(t, app, { url: '/project_metadata.json' })
  t.equal(res.statusCode, 503)
  t.equal(res.json().code, 'service_unavailable')
  t.match(res.json().hint, /retry/)
  t.equal(res.headers.connection, 'close')
  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 503, 'readiness fails at once, so the load balancer stops sending')
  t.match(await app.readiness(), { status: 'not ready', closing: true }, 'the details say why')
  app.lifecycle.closing = false
})
