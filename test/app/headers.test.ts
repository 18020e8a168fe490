// Security headers per kind of response (plugins/headers): JSON answers and
// errors, the /docs page, the project pages, the catalogue images; HSTS only over https.
import type { LightMyRequestResponse } from 'fastify'
import t, { type Test } from 'tap'
import { call, testApp, tokenFor } from '../helpers/app.js'

/** What every response carries, whatever its kind. */
function common(t: Test, res: LightMyRequestResponse, label: string): void {
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${label}: nosniff`)
  t.equal(res.headers['referrer-policy'], 'no-referrer', `${label}: Referrer-Policy`)
  t.equal(res.headers['x-frame-options'], 'DENY', `${label}: never framed`)
  t.notOk(res.headers['x-powered-by'], `${label}: no X-Powered-By`)
}

t.test('JSON answers, errors included: nosniff, no-referrer, never framed, same-origin; no HSTS over http', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['read:projects'])
  const responses: [string, LightMyRequestResponse][] = [
    ['getProjects 200', await call(t, app, { url: '/project_metadata.json', headers: { authorization: `Bearer ${token}` } })],
    ['getProjects 401', await call(t, app, { url: '/project_metadata.json' })],
    ['404', await call(t, app, { url: '/nope' })],
    ['405', await call(t, app, { method: 'DELETE', url: '/leads.json' })],
    [
      'token 401',
      await call(t, app, {
        method: 'POST',
        url: '/api/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      }),
    ],
    ['jwks', await call(t, app, { url: '/.well-known/jwks.json' })],
    ['openapi.json', await call(t, app, { url: '/openapi.json' })],
    ['healthz', await app.inject({ url: '/healthz' })],
  ]
  for (const [label, res] of responses) {
    common(t, res, label)
    t.equal(res.headers['cross-origin-resource-policy'], 'same-origin', `${label}: not embeddable by other sites`)
    t.notOk(res.headers['strict-transport-security'], `${label}: no HSTS when PUBLIC_BASE_URL is http`)
    t.notOk(res.headers['cross-origin-opener-policy'], `${label}: no page-only header on JSON`)
  }
})

t.test('/docs: a CSP of its own (own scripts only, never framed)', async (t) => {
  const { app, config } = await testApp(t)
  for (const url of ['/docs', '/docs/', '/docs/static/swagger-initializer.js']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, url)
    common(t, res, url)
    const csp = String(res.headers['content-security-policy'])
    t.match(csp, /frame-ancestors 'none'/, `${url}: frame-ancestors 'none'`)
    t.match(csp, /script-src 'self'(;|$)/, `${url}: scripts from this server only`)
    t.match(csp, /object-src 'none'/, `${url}: no plugins`)
    t.match(csp, new RegExp(`connect-src 'self' ${new URL(config.publicBaseUrl).origin}`), `${url}: Try it out reaches the API`)
    t.notMatch(csp, /unsafe-eval|\*/, `${url}: no eval, no wildcard`)
    t.equal(res.headers['cross-origin-opener-policy'], 'same-origin', `${url}: helmet's page headers`)
  }
})

t.test('project pages keep their own CSP; images may be shown by other origins (the MCP views)', async (t) => {
  const { app, config } = await testApp(t)
  const project = app.catalogue.current()?.projects[0]
  if (!project) throw new Error('no catalogue')
  for (const url of ['/projects', `/projects/${project.id}`]) {
    const page = await app.inject({ url })
    t.equal(page.statusCode, 200, url)
    common(t, page, url)
    const csp = String(page.headers['content-security-policy'])
    t.match(csp, /^default-src 'none'; /, `${url}: the page's own CSP, not replaced`)
    t.match(csp, new RegExp(`img-src 'self' ${new URL(config.publicBaseUrl).origin}`), `${url}: images from this server`)
    t.match(csp, /script-src 'none'/, `${url}: no script without the enquiry form`)
    t.match(csp, /frame-ancestors 'none'/, `${url}: never framed`)
  }
  const imagePath = new URL(project.images[0]?.url ?? '').pathname
  const image = await app.inject({ url: imagePath })
  t.equal(image.statusCode, 200, imagePath)
  common(t, image, 'image')
  t.equal(image.headers['cross-origin-resource-policy'], 'cross-origin', 'images load in the hosts’ sandboxed frames')
})

t.test('HSTS only when PUBLIC_BASE_URL is https, for this host only', async (t) => {
  const { app } = await testApp(t, { publicBaseUrl: 'https://api.studio.example' })
  for (const url of ['/nope', '/.well-known/jwks.json', '/docs']) {
    const res = await app.inject({ url })
    t.equal(res.headers['strict-transport-security'], 'max-age=31536000', `${url}: HSTS, without includeSubDomains`)
  }
})
