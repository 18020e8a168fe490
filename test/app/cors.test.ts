// CORS: off by default; with CORS_ORIGINS, the studio's website can post its contact form. The
// OAuth endpoints answer any origin (the MCP Inspector); the staff sign-in pages none.
import t from 'tap'
import { StaffEnrolments } from '../../features/staff/enrolments.js'
import { basic, call, leadOf, newClient, testApp } from '../helpers/app.js'

const SUBMIT = '/scripts/enquiry_backend.php'
const preflight = (origin: string) => ({
  method: 'OPTIONS' as const,
  url: SUBMIT,
  headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
})

t.test('without CORS_ORIGINS no origin is allowed', async (t) => {
  const { app } = await testApp(t, { leadsAllowAnonymous: true })
  const res = await call(t, app, preflight('https://studio.example'))
  t.equal(res.statusCode, 405, 'a preflight is just an OPTIONS request')
  t.equal(res.headers['access-control-allow-origin'], undefined)
  const post = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { origin: 'https://studio.example' },
    payload: { ...leadOf(1), consent: true },
  })
  t.equal(post.statusCode, 200)
  t.equal(post.headers['access-control-allow-origin'], undefined, 'a browser would not let the page read it')
})

t.test('a listed origin may post the contact form from a browser', async (t) => {
  const { app } = await testApp(t, { leadsAllowAnonymous: true, corsOrigins: ['https://studio.example'] })
  const ok = await app.inject(preflight('https://studio.example'))
  t.equal(ok.statusCode, 204)
  t.equal(ok.headers['access-control-allow-origin'], 'https://studio.example')
  t.match(ok.headers['access-control-allow-methods'], /POST/)
  t.match(String(ok.headers['access-control-allow-headers']).toLowerCase(), /content-type/)

  const post = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { origin: 'https://studio.example' },
    payload: { ...leadOf(1), consent: true },
  })
  t.equal(post.statusCode, 200)
  t.equal(post.headers['access-control-allow-origin'], 'https://studio.example')
  t.match(post.headers['access-control-expose-headers'], /X-RateLimit-Remaining/)

  const other = await app.inject(preflight('https://elsewhere.example'))
  t.not(other.headers['access-control-allow-origin'], 'https://elsewhere.example', 'an unlisted origin is not allowed')
  const bad = await call(t, app, { method: 'POST', url: SUBMIT, headers: { origin: 'https://studio.example' }, payload: { name: 'A' } })
  t.equal(bad.statusCode, 400)
  t.equal(bad.headers['access-control-allow-origin'], 'https://studio.example', 'errors are readable by the page too')
})

// The OAuth endpoints a browser-based client (the MCP Inspector) calls on its own answer any origin,
// without credentials; the staff sign-in pages never answer another origin, listed or not.
const INSPECTOR = 'http://localhost:6274'
const openPreflight = (url: string, method: 'GET' | 'POST') => ({
  method: 'OPTIONS' as const,
  url,
  headers: { origin: INSPECTOR, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
})

for (const corsOrigins of [[], ['https://studio.example']]) {
  t.test(`OAuth endpoints: CORS for any origin, no credentials (CORS_ORIGINS: ${corsOrigins.join(',') || 'none'})`, async (t) => {
    const { app } = await testApp(t, { corsOrigins })
    const open = (res: { headers: Record<string, unknown> }, what: string) => {
      t.equal(res.headers['access-control-allow-origin'], '*', `${what}: any origin`)
      t.equal(res.headers['access-control-allow-credentials'], undefined, `${what}: no credentials`)
    }
    for (const url of [
      '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource',
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/jwks.json',
    ]) {
      const pre = await app.inject(openPreflight(url, 'GET'))
      t.equal(pre.statusCode, 204, `${url}: preflight`)
      open(pre, `${url} preflight`)
      t.match(pre.headers['access-control-allow-methods'], /GET/)
      const res = await app.inject({ url, headers: { origin: INSPECTOR } })
      t.equal(res.statusCode, 200, url)
      open(res, url)
    }
    for (const url of ['/api/token', '/oauth/register', '/oauth/revoke']) {
      const pre = await app.inject(openPreflight(url, 'POST'))
      t.equal(pre.statusCode, 204, `${url}: preflight`)
      open(pre, `${url} preflight`)
      t.match(pre.headers['access-control-allow-methods'], /POST/)
      t.match(String(pre.headers['access-control-allow-headers']), /Authorization.*Content-Type/)
    }
    const form = { origin: INSPECTOR, 'content-type': 'application/x-www-form-urlencoded' }
    const registered = await app.inject({
      method: 'POST',
      url: '/oauth/register',
      headers: { origin: INSPECTOR, 'content-type': 'application/json' },
      payload: { client_name: 'MCP Inspector', redirect_uris: [`${INSPECTOR}/oauth/callback`], token_endpoint_auth_method: 'none' },
    })
    t.equal(registered.statusCode, 201, registered.body)
    open(registered, 'registration')
    const clientId = registered.json().client_id as string
    const refresh = await app.inject({
      method: 'POST',
      url: '/api/token',
      headers: form,
      payload: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'not-a-token', client_id: clientId }).toString(),
    })
    t.equal(refresh.statusCode, 400)
    t.equal(refresh.json().error, 'invalid_grant', 'the provider takes a cross-origin request (the token is what is wrong)')
    open(refresh, 'token (refresh_token)')
    const revoke = await app.inject({
      method: 'POST',
      url: '/oauth/revoke',
      headers: form,
      payload: new URLSearchParams({ token: 'not-a-token', client_id: clientId }).toString(),
    })
    t.equal(revoke.statusCode, 200, revoke.body)
    open(revoke, 'revocation')
    const { client_id, client_secret } = await newClient(app, ['read:projects'])
    const machine = await app.inject({
      method: 'POST',
      url: '/api/token',
      headers: { ...form, authorization: basic(client_id, client_secret) },
      payload: 'grant_type=client_credentials',
    })
    t.equal(machine.statusCode, 200)
    open(machine, 'token (client_credentials)')
  })
}

t.test('the staff sign-in pages never answer another origin, even a listed one', async (t) => {
  const { app } = await testApp(t, { corsOrigins: ['https://studio.example'] })
  const { token } = await new StaffEnrolments(app.store.db).issue((await app.staff.accounts.add('a@studio.test', null)).id)
  const origin = 'https://studio.example'
  for (const url of ['/oauth/authorize', '/oauth/sign-in/abc', `/oauth/enrol/${token}`, '/oauth/passkey.js']) {
    const pre = await app.inject({
      method: 'OPTIONS',
      url: url === '/oauth/sign-in/abc' ? `${url}/email` : url,
      headers: { origin, 'access-control-request-method': 'POST' },
    })
    t.not(pre.statusCode, 204, `${url}: no preflight`)
    t.equal(pre.headers['access-control-allow-origin'], undefined, `${url}: preflight without CORS`)
    const res = await app.inject({ url, headers: { origin } })
    t.equal(res.headers['access-control-allow-origin'], undefined, `${url}: no CORS (${res.statusCode})`)
  }
  t.equal((await app.inject({ url: `/oauth/enrol/${token}`, headers: { origin } })).statusCode, 200, 'the enrolment page itself answers')
  // The listed origin keeps its CORS on the API.
  const api = await app.inject(preflight(origin))
  t.equal(api.headers['access-control-allow-origin'], origin)
})

// The options are chosen once per route (plugins/cors): every method of a path has its path's
// options, preflights included, and the preflight routes offer no method of their own.
t.test("each route has its path's CORS, whatever the method; OPTIONS is never an allowed method", async (t) => {
  const origin = 'https://studio.example'
  const { app } = await testApp(t, { corsOrigins: [origin] })
  const head = await app.inject({ method: 'HEAD', url: '/.well-known/jwks.json', headers: { origin: INSPECTOR } })
  t.equal(head.statusCode, 200)
  t.equal(head.headers['access-control-allow-origin'], '*', 'HEAD of an open path: any origin')
  const unknownOpen = await app.inject(openPreflight('/.well-known/not-a-document', 'GET'))
  t.equal(unknownOpen.statusCode, 204, 'a preflight under /.well-known/ is open, as the prefix is')
  t.equal(unknownOpen.headers['access-control-allow-origin'], '*')
  const unknownClosed = await app.inject({
    method: 'OPTIONS',
    url: '/oauth/not-a-page',
    headers: { origin, 'access-control-request-method': 'GET' },
  })
  t.equal(unknownClosed.statusCode, 404, 'a preflight under /oauth/ is an OPTIONS request like any other')
  t.equal(unknownClosed.headers['access-control-allow-origin'], undefined)
  for (const [method, url] of [
    ['GET', '/api/token'],
    ['DELETE', '/oauth/register'],
    ['PUT', '/oauth/authorize'],
  ] as const) {
    const res = await app.inject({ method, url })
    t.equal(res.statusCode, 405, `${method} ${url}`)
    t.notMatch(String(res.headers.allow), /OPTIONS/, `${method} ${url}: Allow ${res.headers.allow}`)
  }
  const listed = await app.inject({ url: '/healthz', headers: { origin } })
  t.equal(listed.headers['access-control-allow-origin'], origin)
  t.match(listed.headers.vary, /Origin/, 'an answer that depends on the Origin says so to caches')
})
