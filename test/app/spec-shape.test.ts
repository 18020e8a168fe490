// What the spec says about the API's shape, held against the spec and the app: the token endpoint
// declares its HTTP Basic client authentication (and the app accepts exactly that), TokenRequest's
// strings are bounded, every response marks the headers the server always sends as required
// (test/helpers/app.ts's call() checks them on every response the suites see), every operation has
// a description. (The spec's lint, Redocly and Spectral with .spectral.yaml, runs once in `npm test`'s
// pretest; the project's own Spectral rules are shown refusing what they exist to refuse in
// test/system/spec-rules.test.ts.)
import t from 'tap'
import { deref } from '../../plugins/spec/document.js'
import { basic, call, newClient, spec, testApp } from '../helpers/app.js'

t.test('POST /api/token declares its HTTP Basic client authentication; client_secret_post is documented', async (t) => {
  const op = spec.operations.get('issueToken')
  t.same(op?.security, [{ ClientBasic: [] }], 'issueToken: security names ClientBasic')
  const scheme = spec.document.components.securitySchemes.ClientBasic as { type: string; scheme: string; description: string }
  t.equal(scheme.type, 'http')
  t.equal(scheme.scheme, 'basic')
  t.match(scheme.description, /client_secret_post/, 'the body alternative is documented on the scheme')
  t.match(op?.description, /client_secret_post/, 'and on the operation')

  const { app, config } = await testApp(t)
  const served = app.spec.served(config)
  t.same(served.paths['/api/token']?.post?.security, [{ ClientBasic: [] }], 'the served document says the same')
  const metadata = (await app.inject({ url: '/.well-known/oauth-authorization-server' })).json()
  t.same(
    metadata.token_endpoint_auth_methods_supported,
    ['client_secret_basic', 'client_secret_post', 'none'],
    'machine clients by secret; public clients (staff sign-in: DCR, client ID metadata documents) by none and PKCE',
  )

  // What is accepted did not change: both ways, never both at once.
  const client = await newClient(app, ['read:projects'])
  const form = 'application/x-www-form-urlencoded'
  const viaBasic = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': form },
    payload: 'grant_type=client_credentials',
  })
  t.equal(viaBasic.statusCode, 200, 'client_secret_basic')
  const viaBody = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { 'content-type': form },
    payload: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret,
    }).toString(),
  })
  t.equal(viaBody.statusCode, 200, 'client_secret_post')
  const neither = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { 'content-type': form },
    payload: 'grant_type=client_credentials',
  })
  t.equal(neither.statusCode, 401, 'neither: 401')
  t.equal(neither.json().error, 'invalid_client', 'an RFC 6749 invalid_client')
  t.equal(neither.headers['www-authenticate'], 'Basic realm="studio-api"')
})

t.test("TokenRequest's strings are bounded: an over-long value is an RFC 6749 invalid_request", async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects'])
  const res = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: `grant_type=client_credentials&scope=${'read:projects+'.repeat(100)}read:projects`,
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.equal(res.json().error, 'invalid_request')
  t.match(res.json().hint, /scope/)
})

t.test('every response of every operation marks the headers the server always sends as required', async (t) => {
  // Written before a request could be read: no budget spent, so no rate-limit headers.
  const early = new Set(['408', '431'])
  for (const op of spec.operations.values()) {
    for (const [status, written] of Object.entries(op.responses as Record<string, unknown>)) {
      const response = deref(spec.document, written) as { headers?: Record<string, { required?: boolean }> }
      const headers = Object.fromEntries(
        Object.entries(response.headers ?? {}).map(([name, h]) => [
          name,
          (deref(spec.document, h) as { required?: boolean }).required === true,
        ]),
      )
      const where = `${op.operationId} ${status}`
      t.equal(headers['X-API-Version'], true, `${where}: X-API-Version required`)
      t.equal(headers['X-Request-Id'], true, `${where}: X-Request-Id required`)
      if (!early.has(status)) {
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          t.equal(headers[name], true, `${where}: ${name} required`)
        }
      }
      if (status === '429') t.equal(headers['Retry-After'], true, `${where}: Retry-After required`)
    }
  }
})

t.test('every operation has a description', async (t) => {
  for (const op of spec.operations.values()) t.ok((op as { description?: string }).description?.trim(), `${op.operationId}`)
})
