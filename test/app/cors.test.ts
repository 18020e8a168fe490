// CORS: off by default; with CORS_ORIGINS, the studio's website can post its contact form.
import t from 'tap'
import { call, leadOf, testApp } from '../helpers/app.js'

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
