// POST /api/token: client credentials with HTTP Basic and client_secret_post, RFC 6749 §5.2
// errors (also in the Error shape), scopes, RFC 8707 resources (the token's audience, and which
// resource accepts it), content types, body limit, and the rate limits on token requests and on
// failed client authentications (per client id and address, and per address: never per client
// id alone, so a stranger cannot lock the rightful client out).
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose'
import t, { type Test } from 'tap'
import { createClient } from '../../plugins/auth/admin.js'
import { AUTH_FAILURE_BUDGETS } from '../../plugins/auth/failures.js'
import { basic, call, newClient, testApp } from '../helpers/app.js'

const PER_PAIR = AUTH_FAILURE_BUDGETS.authFailures.max
const PER_ADDRESS = AUTH_FAILURE_BUDGETS.authFailuresPerAddress.max

/**
 * The RFC 6749 `error` of each code the token endpoint answers: the RFC's own codes (and RFC
 * 8707's invalid_target) are themselves; a spent budget or an outage is `temporarily_unavailable` (a client library
 * retries later, where `rate_limited` means nothing to it and `invalid_client` would make it
 * give up on right credentials), a crash `server_error`, the rest `invalid_request`.
 */
const RFC_ERROR: Record<string, string> = {
  invalid_request: 'invalid_request',
  invalid_client: 'invalid_client',
  invalid_grant: 'invalid_grant',
  invalid_scope: 'invalid_scope',
  unsupported_grant_type: 'unsupported_grant_type',
  invalid_target: 'invalid_target', // RFC 8707's
  rate_limited: 'temporarily_unavailable',
  service_unavailable: 'temporarily_unavailable',
  internal_error: 'server_error',
  payload_too_large: 'invalid_request',
  unsupported_media_type: 'invalid_request',
}
/** RFC 6749 §5.2: error_description is %x20-21 / %x23-5B / %x5D-7E. */
const RFC_DESCRIPTION = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

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

/**
 * Every token endpoint error: the Error shape and the RFC 6749 §5.2 fields: `error` the RFC code
 * of `code` (itself for the RFC's own codes), `error_description` the message in the RFC's
 * characters (changed by design from "error equals code" and "description starts with the
 * message", which let `"` and non-RFC codes through).
 */
function isOAuthError(t: Test, res: LightMyRequestResponse, status: number, code: string, label = code) {
  t.equal(res.statusCode, status, `${label}: status`)
  const body = res.json()
  t.equal(body.code, code, `${label}: code`)
  t.equal(body.error, RFC_ERROR[code], `${label}: error is the RFC 6749 code of ${code}`)
  t.type(body.message, 'string', `${label}: message`)
  t.ok(body.message.length > 0, `${label}: message is not empty`)
  t.type(body.error_description, 'string', `${label}: error_description`)
  t.match(body.error_description, RFC_DESCRIPTION, `${label}: error_description only in RFC 6749 §5.2 characters`)
  // A message that is printable ASCII is carried as is but for quotes and backslashes.
  const printable = /^[\x20-\x7E]*$/.test(body.message)
  const carried = printable ? body.message.replaceAll('"', "'").replaceAll('\\', '/') : body.message.split(' ')[0]
  t.ok(body.error_description.startsWith(carried), `${label}: error_description carries the message`)
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
  const client = await createClient(app.auth.admin, { name: 'web', scopes: ['read:projects'], id, secret })
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
  t.equal(await app.auth.admin.clients.revoke(client.client_id, new Date().toISOString()), true)
  isInvalidClient(t, await token(t, app, { auth: basic(client.client_id, client.client_secret) }), 'revoked client, at once')
  t.equal((await token(t, app, { auth: basic(other.client_id, other.client_secret) })).statusCode, 200, 'other clients are unaffected')
})

t.test(
  'grant type: missing is invalid_request, anything but client_credentials (and the staff sign-in grants) unsupported_grant_type',
  async (t) => {
    const { app } = await testApp(t)
    const client = await newClient(app, ['read:projects'])
    const auth = basic(client.client_id, client.client_secret)
    const missing = isOAuthError(t, await token(t, app, { auth, body: 'scope=read%3Aprojects' }), 400, 'invalid_request', 'no grant_type')
    t.match(missing.hint, /grant_type/)
    for (const grant of ['password', 'CLIENT_CREDENTIALS', '']) {
      const res = await token(t, app, { auth, body: `grant_type=${encodeURIComponent(grant)}&username=a&password=b` })
      const err = isOAuthError(t, res, 400, 'unsupported_grant_type', `grant_type=${grant}`)
      t.match(err.hint, /grant_type=client_credentials/)
    }
    // authorization_code and refresh_token belong to the staff sign-in (features/staff), which knows
    // no machine client: refused in RFC 6749 JSON, never a token.
    for (const grant of ['authorization_code', 'refresh_token']) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/token',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=${grant}&code=x&refresh_token=x&redirect_uri=https%3A%2F%2Fx.test%2F`,
      })
      t.ok(res.statusCode === 400 || res.statusCode === 401, `grant_type=${grant}: refused`)
      t.equal(res.json().access_token, undefined)
      t.match(res.json().error, /^invalid_(client|grant|request)$/)
    }
  },
)

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

t.test('failures from strangers never lock the rightful client out', async (t) => {
  const { app } = await testApp(t)
  const victim = await newClient(app, ['read:projects'])
  // Ten times the pair budget of wrong secrets for the victim's (public) client id, each from
  // an address of its own: no (client id, address) pair and no address reaches a limit.
  for (let i = 1; i <= 3 * PER_PAIR; i++) {
    isInvalidClient(t, await token(t, app, { auth: basic(victim.client_id, `guess-${i}`), from: `10.0.${i}.1` }), `stranger ${i}`)
  }
  const rightful = await token(t, app, { auth: basic(victim.client_id, victim.client_secret), from: '198.51.100.20' })
  t.equal(rightful.statusCode, 200, 'the rightful client, from its own address, still gets its token')
  t.ok(rightful.json().access_token)
})

t.test(`failures per (client id, address): after ${PER_PAIR}, that client from that address is refused`, async (t) => {
  const { app } = await testApp(t)
  const victim = await newClient(app, ['read:projects'])
  const other = await newClient(app, ['read:projects'])
  for (let i = 1; i <= PER_PAIR; i++) {
    isInvalidClient(t, await token(t, app, { auth: basic(victim.client_id, `guess-${i}`), from: '192.0.2.50' }), `failure ${i}`)
  }
  const res = await token(t, app, { auth: basic(victim.client_id, victim.client_secret), from: '192.0.2.50' })
  const err = isOAuthError(t, res, 429, 'rate_limited', 'the right secret from the guessing address')
  t.match(err.message, /this client from this address/)
  t.match(err.hint, /retry after \d+ seconds/)
  t.notOk(res.json().access_token, 'no token')
  // The headers show the budget that was spent, not the token endpoint's own.
  t.equal(res.headers['x-ratelimit-limit'], String(PER_PAIR), 'X-RateLimit-Limit: the per-pair budget')
  t.equal(res.headers['x-ratelimit-remaining'], '0')
  t.match(res.headers['retry-after'], /^\d+$/)
  t.ok(Number(res.headers['retry-after']) >= 1 && Number(res.headers['retry-after']) <= 60, 'Retry-After within the window')
  t.equal(res.headers['x-ratelimit-reset'], res.headers['retry-after'], 'X-RateLimit-Reset: when that budget resets')

  // client_secret_post counts against the same pair.
  const post = await token(t, app, {
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: victim.client_id,
      client_secret: victim.client_secret,
    }).toString(),
    from: '192.0.2.50',
  })
  isOAuthError(t, post, 429, 'rate_limited', 'client_secret_post from the guessing address')

  // The same client from another address, and another client from the same address, are served.
  t.equal((await token(t, app, { auth: basic(victim.client_id, victim.client_secret), from: '192.0.2.51' })).statusCode, 200)
  t.equal((await token(t, app, { auth: basic(other.client_id, other.client_secret), from: '192.0.2.50' })).statusCode, 200)
})

t.test(`failures per address: after ${PER_ADDRESS} for any client ids, every client from it is refused`, async (t) => {
  const { app } = await testApp(t)
  const a = await newClient(app, ['read:projects'])
  const b = await newClient(app, ['read:projects'])
  t.ok(PER_ADDRESS > PER_PAIR, 'the address budget is the wider one (else the pair budget would never be reached)')
  for (let i = 1; i <= PER_ADDRESS; i++) {
    isInvalidClient(t, await token(t, app, { auth: basic(`cl_guess_${i}`, 'x'), from: '192.0.2.7' }), `failure ${i}`)
  }
  for (const c of [a, b]) {
    const res = await token(t, app, { auth: basic(c.client_id, c.client_secret), from: '192.0.2.7' })
    const err = isOAuthError(t, res, 429, 'rate_limited', `${c.client_id} from the spent address`)
    t.match(err.message, /from this address/)
    t.equal(res.headers['x-ratelimit-limit'], String(PER_ADDRESS), 'X-RateLimit-Limit: the per-address budget')
    t.equal(res.headers['x-ratelimit-remaining'], '0')
    t.match(res.headers['retry-after'], /^\d+$/)
  }
  // From another address the same clients still get tokens: the limit is per address.
  t.equal((await token(t, app, { auth: basic(a.client_id, a.client_secret), from: '192.0.2.8' })).statusCode, 200)
  t.equal((await token(t, app, { auth: basic(b.client_id, b.client_secret), from: '192.0.2.8' })).statusCode, 200)
})

t.test('an IPv6 caller counts as its /64: it cannot spread its failures over its own addresses', async (t) => {
  const { app } = await testApp(t)
  const victim = await newClient(app, ['read:projects'])
  for (let i = 1; i <= PER_PAIR; i++) {
    const from = `2001:db8:1:2:${i.toString(16)}::7`
    isInvalidClient(t, await token(t, app, { auth: basic(victim.client_id, `guess-${i}`), from }), `failure ${i} from ${from}`)
  }
  const same64 = await token(t, app, { auth: basic(victim.client_id, victim.client_secret), from: '2001:db8:1:2:ffff::1' })
  isOAuthError(t, same64, 429, 'rate_limited', 'another address of the same /64')
  const other64 = await token(t, app, { auth: basic(victim.client_id, victim.client_secret), from: '2001:db8:1:3::1' })
  t.equal(other64.statusCode, 200, 'another /64 is another caller')
})

t.test('the failure budgets are named budgets that RATE_LIMITS overrides', async (t) => {
  const { app } = await testApp(t, { rateLimits: { authFailures: { max: 2 }, authFailuresPerAddress: { max: 3 } } })
  const c = await newClient(app, ['read:projects'])
  for (let i = 1; i <= 2; i++) await token(t, app, { auth: basic(c.client_id, 'wrong'), from: '203.0.113.9' })
  const pair = await token(t, app, { auth: basic(c.client_id, c.client_secret), from: '203.0.113.9' })
  t.equal(pair.statusCode, 429)
  t.equal(pair.headers['x-ratelimit-limit'], '2')
  await token(t, app, { auth: basic('cl_other', 'wrong'), from: '203.0.113.9' })
  const address = await token(t, app, { auth: basic('cl_third', 'x'), from: '203.0.113.9' })
  t.equal(address.statusCode, 429)
  t.equal(address.headers['x-ratelimit-limit'], '3')
})

t.test('a success does not spend the failure budget; nine failures still allow the tenth try', async (t) => {
  const { app } = await testApp(t)
  const c = await newClient(app, ['read:projects'])
  for (let i = 1; i < PER_PAIR; i++) await token(t, app, { auth: basic(c.client_id, 'wrong') })
  for (let i = 0; i < 3; i++) {
    t.equal((await token(t, app, { auth: basic(c.client_id, c.client_secret) })).statusCode, 200, `success ${i + 1} after 9 failures`)
  }
  isInvalidClient(t, await token(t, app, { auth: basic(c.client_id, 'wrong') }), 'the tenth failure is still answered 401')
  isOAuthError(t, await token(t, app, { auth: basic(c.client_id, c.client_secret) }), 429, 'rate_limited', 'then limited')
})

t.test('error_description holds only the characters RFC 6749 allows, whatever the request echoed', async (t) => {
  const { app } = await testApp(t)
  const c = await newClient(app, ['read:projects'])
  const auth = basic(c.client_id, c.client_secret)
  for (const grant of ['pass"word', 'back\\slash', 'ünïcode', 'tab\there', 'new\nline', '"; x="y']) {
    const res = await token(t, app, { auth, body: `grant_type=${encodeURIComponent(grant)}` })
    const err = isOAuthError(t, res, 400, 'unsupported_grant_type', JSON.stringify(grant))
    t.notMatch(err.error_description, /["\\]/, `${JSON.stringify(grant)}: no quote or backslash`)
  }
  // The Basic hint quotes a header: in the description the quotes become apostrophes.
  const res = await token(t, app, { auth: 'Basic %%%' })
  const err = isInvalidClient(t, res, 'unreadable Basic')
  t.match(err.hint, /"Authorization: Basic/, 'the hint keeps its quotes')
  t.match(err.error_description, /'Authorization: Basic/, 'the description has apostrophes instead')
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

t.test('RFC 8707: resource selects the audience, and each resource accepts only its own tokens', async (t) => {
  const { app, config } = await testApp(t)
  const base = config.publicBaseUrl
  const client = await newClient(app, ['read:leads', 'read:projects'])
  const auth = basic(client.client_id, client.client_secret)
  const jwks = createLocalJWKSet((await call(t, app, { url: '/.well-known/jwks.json' })).json())
  const tokenFor = async (...resources: string[]) => {
    const body = new URLSearchParams([['grant_type', 'client_credentials'], ...resources.map((r) => ['resource', r])])
    const res = await token(t, app, { auth, body: body.toString() })
    t.equal(res.statusCode, 200, `resource ${resources.join(' + ') || '(none)'}: 200`)
    return res.json().access_token as string
  }
  const onLeads = (tok: string) => call(t, app, { url: '/leads.json?limit=1', headers: { authorization: `Bearer ${tok}` } })
  const onMcp = (tok: string) =>
    call(t, app, {
      method: 'POST',
      url: '/mcp',
      headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'a', version: '1' } },
      },
    })

  // A token for {base}/mcp: aud is /mcp (jose verifies it with the published keys); /mcp takes it, the REST API does not.
  const mcp = await tokenFor(`${base}/mcp`)
  const { payload } = await jwtVerify(mcp, jwks, { issuer: base, audience: `${base}/mcp`, typ: 'at+jwt', algorithms: ['EdDSA'] })
  t.equal(payload.aud, `${base}/mcp`)
  await t.rejects(
    jwtVerify(mcp, jwks, { audience: base, algorithms: ['EdDSA'] }),
    { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
    'not for the API',
  )
  t.equal((await onMcp(mcp)).statusCode, 200, 'a /mcp token works on /mcp')
  const refused = await onLeads(mcp)
  t.equal(refused.statusCode, 401, 'and is refused by GET /leads.json')
  t.equal(refused.json().code, 'unauthorized')
  t.match(refused.json().hint, `issued for another resource; request one with resource=${base} `)
  t.match(refused.headers['www-authenticate'], /^Bearer realm="studio-api", error="invalid_token"/)

  // No resource: the API, as before (aud is the base URL); refused by /mcp.
  const api = await tokenFor()
  t.equal((await jwtVerify(api, jwks, { audience: base, algorithms: ['EdDSA'] })).payload.aud, base)
  t.equal((await onLeads(api)).statusCode, 200, 'clients that name no resource keep working on the API')
  const notMcp = await onMcp(api)
  t.equal(notMcp.statusCode, 401, 'an API token is refused by /mcp')
  t.match(notMcp.json().hint, `resource=${base}/mcp`)
  const named = await tokenFor(`${base}/`)
  t.equal(decodeJwt(named).aud, base, 'the API by name (a trailing slash does not matter)')

  // Both, with the parameter repeated: aud lists both, and both accept it.
  const both = await tokenFor(base, `${base}/mcp`)
  t.same((await jwtVerify(both, jwks, { audience: `${base}/mcp`, algorithms: ['EdDSA'] })).payload.aud, [base, `${base}/mcp`])
  t.equal((await onLeads(both)).statusCode, 200)
  t.equal((await onMcp(both)).statusCode, 200)

  // Anything else is invalid_target (RFC 8707 §2), with the resources there are.
  for (const resource of ['https://other.example', `${base}/leads.json`, 'mcp', `${base}/mcp#frag`, '']) {
    const body = new URLSearchParams({ grant_type: 'client_credentials', resource })
    const err = isOAuthError(t, await token(t, app, { auth, body: body.toString() }), 400, 'invalid_target', `resource=${resource}`)
    t.match(err.hint, `resource=${base} or resource=${base}/mcp`)
  }
  const mixed = new URLSearchParams([
    ['grant_type', 'client_credentials'],
    ['resource', `${base}/mcp`],
    ['resource', 'https://other.example'],
  ])
  isOAuthError(t, await token(t, app, { auth, body: mixed.toString() }), 400, 'invalid_target', 'one known and one unknown')

  // Discovery says so: the authorization server lists the resources (RFC 9728 §4).
  const metadata = (await call(t, app, { url: '/.well-known/oauth-authorization-server' })).json()
  t.same(metadata.protected_resources, [base, `${base}/mcp`])
})
