// POST /api/token: client credentials with HTTP Basic and client_secret_post, RFC 6749 §5.2
// errors (also in the Error shape), scopes, content types, body limit, and the rate limits on
// token requests and on failed client authentications.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import t, { type Test } from 'tap'
import { createClient } from '../plugins/auth/clients-admin.js'
import { AUTH_FAILURES } from '../plugins/rate-limit.js'
import { basic, call, newClient, testApp } from './helpers/app.js'

const FORM = 'application/x-www-form-urlencoded'

function token(
  t: Test,
  app: FastifyInstance,
  { auth, body = 'grant_type=client_credentials', type = FORM, from }: { auth?: string; body?: string; type?: string; from?: string } = {},
): Promise<LightMyRequestResponse> {
  return call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { 'content-type': type, ...(auth === undefined ? {} : { authorization: auth }) },
    payload: body,
    ...(from === undefined ? {} : { remoteAddress: from }),
  })
}

/** Every token endpoint error: the Error shape and the RFC 6749 §5.2 fields, error === code. */
function isOAuthError(t: Test, res: LightMyRequestResponse, status: number, code: string, label = code) {
  t.equal(res.statusCode, status, `${label}: status`)
  const body = res.json()
  t.equal(body.code, code, `${label}: code`)
  t.equal(body.error, code, `${label}: error equals code`)
  t.type(body.message, 'string', `${label}: message`)
  t.ok(body.message.length > 0, `${label}: message is not empty`)
  t.type(body.error_description, 'string', `${label}: error_description`)
  t.ok(body.error_description.startsWith(body.message), `${label}: error_description carries the message`)
  t.equal(res.headers['cache-control'], 'no-store', `${label}: Cache-Control: no-store`)
  return body as { code: string; message: string; hint?: string; error: string; error_description: string }
}

function isInvalidClient(t: Test, res: LightMyRequestResponse, label: string) {
  const body = isOAuthError(t, res, 401, 'invalid_client', label)
  t.equal(res.headers['www-authenticate'], 'Basic realm="studio-api"', `${label}: Basic challenge`)
  return body
}

t.test('HTTP Basic: a token with every allowed scope, not cached', async (t) => {
  const { app, config } = await testApp(t)
  const client = await newClient(app, ['read:projects', 'write:leads'])
  const res = await token(t, app, { auth: basic(client.client_id, client.client_secret) })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  t.match(res.headers['content-type'], /^application\/json/)
  const body = res.json()
  t.equal(body.token_type, 'Bearer')
  t.equal(body.expires_in, 3600)
  t.equal(body.scope, 'read:projects write:leads', 'absent scope: all the client may have')
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type'])
  const header = decodeProtectedHeader(body.access_token)
  t.equal(header.typ, 'at+jwt')
  t.equal(header.alg, 'EdDSA')
  const claims = decodeJwt(body.access_token)
  t.equal(claims.sub, client.client_id)
  t.equal(claims.client_id, client.client_id)
  t.equal(claims.scope, 'read:projects write:leads')
  t.equal(claims.iss, config.publicBaseUrl)
  t.equal(claims.aud, config.publicBaseUrl)
  t.equal((claims.exp ?? 0) - (claims.iat ?? 0), 3600)
  t.type(claims.jti, 'string')

  // The token works.
  const projects = await call(t, app, { url: '/project_metadata.json', headers: { authorization: `Bearer ${body.access_token}` } })
  t.equal(projects.statusCode, 200)
})

t.test('client_secret_post: credentials in the body', async (t) => {
  const { app } = await testApp(t, { tokenTtlSeconds: 600 })
  const client = await newClient(app, ['read:leads'])
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret })
  const res = await token(t, app, { body: body.toString() })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['cache-control'], 'no-store')
  t.equal(res.json().scope, 'read:leads')
  t.equal(res.json().expires_in, 600, 'the lifetime is configurable')
  const claims = decodeJwt(res.json().access_token)
  t.equal((claims.exp ?? 0) - (claims.iat ?? 0), 600)

  const wrong = await token(t, app, {
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: 'nope' }).toString(),
  })
  isInvalidClient(t, wrong, 'wrong secret in the body')
  const noSecret = await token(t, app, {
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id }).toString(),
  })
  isInvalidClient(t, noSecret, 'client_id without client_secret')
})

t.test('Basic credentials are form-urlencoded before base64 (RFC 6749 §2.3.1)', async (t) => {
  const { app } = await testApp(t)
  const id = 'studio:web+1'
  const secret = 'p@ss word:/+%&=é'
  const client = await createClient(app.store, app.auth.pepper, { name: 'web', scopes: ['read:projects'], id, secret })
  t.equal(client.client_id, id, 'custom ids are allowed')

  // encodeURIComponent (the test helper) and application/x-www-form-urlencoded (space as +).
  const form = (s: string) => new URLSearchParams({ v: s }).toString().slice(2)
  t.equal(form(secret).includes('+'), true, 'the form encoding of the secret has a + for the space')
  const viaForm = `Basic ${Buffer.from(`${form(id)}:${form(secret)}`).toString('base64')}`
  for (const [label, auth] of [
    ['percent-encoded', basic(id, secret)],
    ['form-encoded', viaForm],
  ] as const) {
    const res = await token(t, app, { auth })
    t.equal(res.statusCode, 200, `${label}: accepted`)
    t.equal(decodeJwt(res.json().access_token).client_id, id, `${label}: the token names the decoded client id`)
  }

  // Unencoded, the colon in the id splits at the wrong place: refused, not mis-authenticated.
  const raw = await token(t, app, { auth: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` })
  isInvalidClient(t, raw, 'unencoded colon in the id')

  // The same id and secret also work in the body (decoded by the form parser).
  const post = await token(t, app, {
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret }).toString(),
  })
  t.equal(post.statusCode, 200)
})

t.test('both authentication methods at once is invalid_request', async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects'])
  const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret })
  const res = await token(t, app, { auth: basic(client.client_id, client.client_secret), body: body.toString() })
  const err = isOAuthError(t, res, 400, 'invalid_request')
  t.match(err.hint, /either/)
  const idOnly = await token(t, app, {
    auth: basic(client.client_id, client.client_secret),
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.client_id }).toString(),
  })
  isOAuthError(t, idOnly, 400, 'invalid_request', 'Basic plus client_id in the body')
})

t.test('no, malformed, wrong, unknown or revoked credentials: 401 invalid_client', async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects'])
  const other = await newClient(app, ['read:projects'])

  isInvalidClient(t, await token(t, app), 'no credentials')
  isInvalidClient(t, await token(t, app, { auth: 'Basic' }), 'Basic without credentials')
  isInvalidClient(t, await token(t, app, { auth: 'Basic %%%' }), 'Basic not base64')
  isInvalidClient(t, await token(t, app, { auth: `Basic ${Buffer.from('no-colon').toString('base64')}` }), 'Basic without a colon')
  isInvalidClient(t, await token(t, app, { auth: basic(client.client_id, 'wrong') }), 'wrong secret')
  isInvalidClient(t, await token(t, app, { auth: basic(client.client_id, other.client_secret) }), "another client's secret")
  isInvalidClient(t, await token(t, app, { auth: basic(client.client_id, '') }), 'empty secret')
  const unknown = isInvalidClient(t, await token(t, app, { auth: basic('cl_nobody', client.client_secret) }), 'unknown client')
  const wrong = isInvalidClient(t, await token(t, app, { auth: basic(client.client_id, 'wrong') }), 'wrong secret again')
  t.equal(unknown.message, wrong.message, 'an unknown client and a wrong secret are indistinguishable')
  t.equal(unknown.hint, wrong.hint)

  t.equal((await token(t, app, { auth: basic(client.client_id, client.client_secret) })).statusCode, 200, 'the right secret works')
  t.equal(await app.store.clients.revoke(client.client_id, new Date().toISOString()), true)
  isInvalidClient(t, await token(t, app, { auth: basic(client.client_id, client.client_secret) }), 'revoked client, at once')
  t.equal((await token(t, app, { auth: basic(other.client_id, other.client_secret) })).statusCode, 200, 'other clients are unaffected')
})

t.test('grant type: missing is invalid_request, anything but client_credentials unsupported_grant_type', async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects'])
  const auth = basic(client.client_id, client.client_secret)
  const missing = isOAuthError(t, await token(t, app, { auth, body: 'scope=read%3Aprojects' }), 400, 'invalid_request', 'no grant_type')
  t.match(missing.hint, /grant_type/)
  for (const grant of ['password', 'authorization_code', 'refresh_token', 'CLIENT_CREDENTIALS', '']) {
    const res = await token(t, app, { auth, body: `grant_type=${encodeURIComponent(grant)}&username=a&password=b` })
    const err = isOAuthError(t, res, 400, 'unsupported_grant_type', `grant_type=${grant}`)
    t.match(err.hint, /grant_type=client_credentials/)
  }
})

t.test('scope: a subset is granted, a scope the client may not have is invalid_scope', async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects', 'read:leads'])
  const auth = basic(client.client_id, client.client_secret)

  const subset = await token(t, app, { auth, body: 'grant_type=client_credentials&scope=read%3Aleads' })
  t.equal(subset.statusCode, 200)
  t.equal(subset.json().scope, 'read:leads')
  t.equal(decodeJwt(subset.json().access_token).scope, 'read:leads')
  // The narrowed token does not carry the other scope.
  const projects = await call(t, app, { url: '/project_metadata.json', headers: { authorization: `Bearer ${subset.json().access_token}` } })
  t.equal(projects.statusCode, 403)

  const both = await token(t, app, { auth, body: 'grant_type=client_credentials&scope=read%3Aleads+read%3Aprojects' })
  t.equal(both.statusCode, 200)
  t.equal(both.json().scope, 'read:leads read:projects')

  const notAllowed = isOAuthError(
    t,
    await token(t, app, { auth, body: 'grant_type=client_credentials&scope=read%3Aleads+write%3Aleads' }),
    400,
    'invalid_scope',
  )
  t.match(notAllowed.message, /write:leads/)
  t.match(notAllowed.hint, /read:projects read:leads/)
  isOAuthError(t, await token(t, app, { auth, body: 'grant_type=client_credentials&scope=admin' }), 400, 'invalid_scope', 'unknown scope')
  isOAuthError(t, await token(t, app, { auth, body: 'grant_type=client_credentials&scope=' }), 400, 'invalid_scope', 'empty scope')
})

t.test('content type and size: JSON is 415, over 4 KiB is 413, empty is 400', async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects'])
  const auth = basic(client.client_id, client.client_secret)

  const json = await token(t, app, { auth, type: 'application/json', body: JSON.stringify({ grant_type: 'client_credentials' }) })
  const e415 = isOAuthError(t, json, 415, 'unsupported_media_type')
  t.match(e415.hint, /application\/x-www-form-urlencoded/)
  isOAuthError(
    t,
    await token(t, app, { auth, type: 'text/plain', body: 'grant_type=client_credentials' }),
    415,
    'unsupported_media_type',
    'text/plain',
  )

  // A well-formed body just over the limit (padding in an ignored parameter).
  const big = `grant_type=client_credentials&pad=${'a'.repeat(4096)}`
  const e413 = isOAuthError(t, await token(t, app, { auth, body: big }), 413, 'payload_too_large')
  t.match(e413.hint, /4096 bytes/)
  const justUnder = `grant_type=client_credentials&pad=${'a'.repeat(4096 - 'grant_type=client_credentials&pad='.length)}`
  t.equal(Buffer.byteLength(justUnder), 4096)
  t.equal((await token(t, app, { auth, body: justUnder })).statusCode, 200, 'exactly 4 KiB is accepted')

  isOAuthError(t, await token(t, app, { auth, body: '' }), 400, 'invalid_request', 'empty body')
})

t.test(`failed authentications are limited per client id: after ${AUTH_FAILURES.max} the right secret is refused too`, async (t) => {
  const { app } = await testApp(t)
  t.equal(AUTH_FAILURES.max, 10)
  const victim = await newClient(app, ['read:projects'])
  // Each failure from its own address: only the per-client counter reaches the limit.
  for (let i = 1; i <= AUTH_FAILURES.max; i++) {
    isInvalidClient(t, await token(t, app, { auth: basic(victim.client_id, `guess-${i}`), from: `10.0.0.${i}` }), `failure ${i}`)
  }
  const res = await token(t, app, { auth: basic(victim.client_id, victim.client_secret), from: '10.0.1.1' })
  const err = isOAuthError(t, res, 429, 'rate_limited', 'the right secret after 10 failures')
  t.match(res.headers['retry-after'], /^\d+$/)
  t.ok(Number(res.headers['retry-after']) >= 1 && Number(res.headers['retry-after']) <= 60, 'Retry-After within the window')
  t.match(err.hint, /retry after \d+ seconds/)
  t.notOk(res.json().access_token, 'no token')

  // client_secret_post counts against the same client id.
  const post = await token(t, app, {
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: victim.client_id,
      client_secret: victim.client_secret,
    }).toString(),
    from: '10.0.1.2',
  })
  t.equal(post.statusCode, 429)

  // Other clients, from a fresh address, are unaffected.
  const other = await newClient(app, ['read:projects'])
  t.equal((await token(t, app, { auth: basic(other.client_id, other.client_secret), from: '10.0.1.3' })).statusCode, 200)
})

t.test(`failed authentications are limited per address: after ${AUTH_FAILURES.max} every client from it is refused`, async (t) => {
  const { app } = await testApp(t)
  const a = await newClient(app, ['read:projects'])
  const b = await newClient(app, ['read:projects'])
  // Ten failures from one address, each for a different (unknown) client id.
  for (let i = 1; i <= AUTH_FAILURES.max; i++) {
    isInvalidClient(t, await token(t, app, { auth: basic(`cl_guess_${i}`, 'x'), from: '192.0.2.7' }), `failure ${i}`)
  }
  for (const c of [a, b]) {
    const res = await token(t, app, { auth: basic(c.client_id, c.client_secret), from: '192.0.2.7' })
    isOAuthError(t, res, 429, 'rate_limited', `${c.client_id} from the spent address`)
    t.match(res.headers['retry-after'], /^\d+$/)
  }
  // From another address the same clients still get tokens: the limit is per address.
  t.equal((await token(t, app, { auth: basic(a.client_id, a.client_secret), from: '192.0.2.8' })).statusCode, 200)
  t.equal((await token(t, app, { auth: basic(b.client_id, b.client_secret), from: '192.0.2.8' })).statusCode, 200)
})

t.test('a success does not spend the failure budget; nine failures still allow the tenth try', async (t) => {
  const { app } = await testApp(t)
  const c = await newClient(app, ['read:projects'])
  for (let i = 1; i < AUTH_FAILURES.max; i++) await token(t, app, { auth: basic(c.client_id, 'wrong') })
  for (let i = 0; i < 3; i++) {
    t.equal((await token(t, app, { auth: basic(c.client_id, c.client_secret) })).statusCode, 200, `success ${i + 1} after 9 failures`)
  }
  isInvalidClient(t, await token(t, app, { auth: basic(c.client_id, 'wrong') }), 'the tenth failure is still answered 401')
  isOAuthError(t, await token(t, app, { auth: basic(c.client_id, c.client_secret) }), 429, 'rate_limited', 'then limited')
})

t.test('the token endpoint has its own per-address limit (30/min, configurable)', async (t) => {
  const { app } = await testApp(t, { rateLimits: { issueToken: { max: 3 } } })
  const c = await newClient(app, ['read:projects'])
  const auth = basic(c.client_id, c.client_secret)
  for (let i = 1; i <= 3; i++) {
    const res = await token(t, app, { auth })
    t.equal(res.statusCode, 200, `request ${i}`)
    t.equal(res.headers['x-ratelimit-limit'], '3')
    t.equal(res.headers['x-ratelimit-remaining'], String(3 - i))
  }
  const over = await token(t, app, { auth })
  isOAuthError(t, over, 429, 'rate_limited', 'fourth request')
  t.match(over.headers['retry-after'], /^\d+$/)
  t.equal(over.headers['x-ratelimit-remaining'], '0')
  // Keyed by address: another address still has its budget.
  t.equal((await token(t, app, { auth, from: '198.51.100.1' })).statusCode, 200)

  const { app: fresh } = await testApp(t)
  const d = await newClient(fresh, ['read:projects'])
  const res = await token(t, fresh, { auth: basic(d.client_id, d.client_secret) })
  t.equal(res.headers['x-ratelimit-limit'], '30', 'the default is 30 per window')
})
