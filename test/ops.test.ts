// Operations: health, readiness, Prometheus metrics, and the answer while shutting down.
import t from 'tap'
import { basic, call, leadOf, newClient, testApp, tokenFor } from './helpers/app.js'

t.test('/healthz and /readyz sit outside auth and rate limits', async (t) => {
  const { app } = await testApp(t)
  const live = await app.inject({ url: '/healthz' })
  t.equal(live.statusCode, 200)
  t.same(live.json(), { status: 'ok' })
  t.equal(live.headers['x-ratelimit-limit'], undefined, 'no rate limit on health checks')
  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 200)
  t.match(ready.json(), { status: 'ready', storage: app.store.dialect, redis: app.redis ? 'ok' : 'not configured' })
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

  const res = await app.inject({ url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain/)
  const text = res.body
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
  app.lifecycle.closing = false
})
