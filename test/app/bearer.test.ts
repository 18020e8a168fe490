// Bearer token verification on GET /project_metadata.json: every token that is not a valid
// access token of this server is 401 `unauthorized` with a hint and an RFC 6750 challenge;
// a valid token without the scope is 403; forged tokens never spend a real client's budget.
import { createPublicKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { decodeJwt, decodeProtectedHeader, generateKeyPair, importPKCS8, type JWTPayload, SignJWT } from 'jose'
import t, { type Test } from 'tap'
import type { Config } from '../../config.js'
import { rotateClient } from '../../plugins/auth/admin.js'
import { basic, call, testApp, tokenFor } from '../helpers/app.js'
import { captureLog } from '../helpers/log.js'

const URL_ = '/project_metadata.json'
const b64url = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')

function get(t: Test, app: FastifyInstance, authorization?: string, from?: string): Promise<LightMyRequestResponse> {
  return call(t, app, {
    url: URL_,
    headers: authorization === undefined ? {} : { authorization },
    ...(from === undefined ? {} : { remoteAddress: from }),
  })
}

function isUnauthorized(t: Test, res: LightMyRequestResponse, label: string, hint?: RegExp) {
  t.equal(res.statusCode, 401, `${label}: 401`)
  const body = res.json()
  t.equal(body.code, 'unauthorized', `${label}: code`)
  t.type(body.hint, 'string', `${label}: has a hint`)
  if (hint) t.match(body.hint, hint, `${label}: hint`)
  t.match(
    res.headers['www-authenticate'],
    /^Bearer realm="studio-api", error="invalid_token"(, error_description="[^"]*")?, resource_metadata="http[^"]+\/\.well-known\/oauth-protected-resource"$/,
    `${label}: challenge`,
  )
  t.notOk(Array.isArray(body), `${label}: no catalogue`)
}

/** The server's own signing key, as the embedded default keeps it. */
async function serverKey(config: Config) {
  const pem = readFileSync(join(config.dataDir, 'keys', 'signing-key.pem'), 'utf8')
  return { pem, key: await importPKCS8(pem, 'EdDSA') }
}

/** Claims and header of a real token, to copy into forgeries. */
async function realToken(app: FastifyInstance, scopes = ['read:projects']) {
  const real = await tokenFor(app, scopes)
  return { ...real, claims: decodeJwt(real.token), header: decodeProtectedHeader(real.token) }
}

/** The claims without one of them. */
function without(claims: JWTPayload, name: string): JWTPayload {
  const { [name]: _dropped, ...rest } = claims
  return rest
}

function signWith(key: Parameters<SignJWT['sign']>[0], claims: JWTPayload, header: Record<string, unknown>) {
  return new SignJWT(claims).setProtectedHeader({ alg: 'EdDSA', ...header } as { alg: string }).sign(key)
}

t.test('a real token works; the baseline for the forgeries', async (t) => {
  const { app, config } = await testApp(t)
  const real = await realToken(app)
  t.equal(real.header.kid, (await app.inject({ url: '/.well-known/jwks.json' })).json().keys[0].kid)
  t.equal((await get(t, app, `Bearer ${real.token}`)).statusCode, 200)
  // Re-signing the real claims with the server key is accepted: the forgeries below fail for their one change.
  const { key } = await serverKey(config)
  const resigned = await signWith(key, real.claims, { kid: real.header.kid, typ: 'at+jwt' })
  t.equal((await get(t, app, `Bearer ${resigned}`)).statusCode, 200, 'same claims, server key: accepted')
})

t.test('forged: the same claims and kid, signed with another Ed25519 key', async (t) => {
  const { app } = await testApp(t)
  const real = await realToken(app)
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
  const forged = await signWith(privateKey, real.claims, { kid: real.header.kid, typ: 'at+jwt' })
  isUnauthorized(t, await get(t, app, `Bearer ${forged}`), 'forged', /not issued by this server/)

  // The real signature on tampered claims is refused too.
  const [h, , s] = real.token.split('.')
  const tampered = `${h}.${b64url({ ...real.claims, scope: 'read:projects read:leads write:leads' })}.${s}`
  isUnauthorized(t, await get(t, app, `Bearer ${tampered}`), 'tampered payload', /not issued by this server/)
})

t.test('expired: signed by the server itself, exp in the past', async (t) => {
  const { app, config } = await testApp(t)
  const real = await realToken(app)
  const { key } = await serverKey(config)
  const now = Math.floor(Date.now() / 1000)
  const expired = await signWith(key, { ...real.claims, iat: now - 7200, exp: now - 3600 }, { kid: real.header.kid, typ: 'at+jwt' })
  isUnauthorized(t, await get(t, app, `Bearer ${expired}`), 'expired', /expired/)

  const future = await signWith(key, { ...real.claims, nbf: now + 3600 }, { kid: real.header.kid, typ: 'at+jwt' })
  isUnauthorized(t, await get(t, app, `Bearer ${future}`), 'not yet valid', /not valid yet/)
})

t.test('a token accepted a moment ago is refused once it expires (the verified-token cache never outlives exp)', async (t) => {
  const { app, config } = await testApp(t)
  const real = await realToken(app)
  const { key } = await serverKey(config)
  const now = Math.floor(Date.now() / 1000)
  const shortLived = await signWith(key, { ...real.claims, iat: now, exp: now + 2 }, { kid: real.header.kid, typ: 'at+jwt' })
  t.equal((await get(t, app, `Bearer ${shortLived}`)).statusCode, 200, 'accepted while it lives')
  t.equal((await get(t, app, `Bearer ${shortLived}`)).statusCode, 200, 'accepted again (now from the cache)')
  await sleep((now + 2) * 1000 - Date.now() + 50)
  isUnauthorized(t, await get(t, app, `Bearer ${shortLived}`), 'expired after use', /expired/)
})

t.test('absurd times: signed with the server key, but dated in the future or living too long', async (t) => {
  const { app, config } = await testApp(t)
  const real = await realToken(app)
  const { key } = await serverKey(config)
  const header = { kid: real.header.kid, typ: 'at+jwt' }
  const now = Math.floor(Date.now() / 1000)
  const year = 365 * 86_400
  const refused: [string, JWTPayload, RegExp][] = [
    ['iat a day ahead', { ...real.claims, iat: now + 86_400, exp: now + 86_400 + 3600 }, /future/],
    ['iat ten years ahead, exp one hour after it', { ...real.claims, iat: now + 10 * year, exp: now + 10 * year + 3600 }, /future/],
    ['a 100-year token', { ...real.claims, iat: now, exp: now + 100 * year }, /longer/],
    ['one second longer than TOKEN_TTL_SECONDS', { ...real.claims, iat: now, exp: now + config.tokenTtlSeconds + 1 }, /longer/],
    ['no iat', without(real.claims, 'iat'), /./],
  ]
  for (const [label, claims, hint] of refused) {
    isUnauthorized(t, await get(t, app, `Bearer ${await signWith(key, claims, header)}`), label, hint)
  }
  const skewed = await signWith(key, { ...real.claims, iat: now + 30, exp: now + 30 + config.tokenTtlSeconds }, header)
  t.equal((await get(t, app, `Bearer ${skewed}`)).statusCode, 200, "an iat 30 s ahead (another instance's clock) is accepted")
})

t.test("a rotated client's old tokens stop within the status TTL; tokens of the new secret work at once", async (t) => {
  const { app } = await testApp(t, { clientStatusTtlSeconds: 1 })
  const real = await realToken(app)
  t.equal((await get(t, app, `Bearer ${real.token}`)).statusCode, 200, 'works before the rotation (status now cached)')
  const secret = await rotateClient(app.auth.admin, real.clientId)
  if (!secret) throw new Error('rotation failed')
  const fresh = await app.inject({
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(real.clientId, secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(fresh.statusCode, 200, 'the new secret gets a token at once')
  t.equal((await get(t, app, `Bearer ${fresh.json().access_token}`)).statusCode, 200, 'and it works at once, stale cache or not')
  await sleep(1100)
  isUnauthorized(t, await get(t, app, `Bearer ${real.token}`), 'a token of the old secret, after the TTL', /rotated/)
  t.equal((await get(t, app, `Bearer ${fresh.json().access_token}`)).statusCode, 200, 'the new token still works')
})

t.test('alg none and algorithm confusion (HS256 keyed with the public key)', async (t) => {
  const { app, config } = await testApp(t)
  const real = await realToken(app)

  for (const alg of ['none', 'None', 'NONE']) {
    const unsigned = `${b64url({ alg, typ: 'at+jwt', kid: real.header.kid })}.${b64url(real.claims)}.`
    isUnauthorized(t, await get(t, app, `Bearer ${unsigned}`), `alg ${alg}`)
  }

  const { pem } = await serverKey(config)
  const publicPem = createPublicKey(pem).export({ format: 'pem', type: 'spki' }).toString()
  const jwk = (await app.inject({ url: '/.well-known/jwks.json' })).json().keys[0]
  const secrets: [string, Uint8Array][] = [
    ['public PEM', new TextEncoder().encode(publicPem)],
    ['public PEM without trailing newline', new TextEncoder().encode(publicPem.trim())],
    ['raw public key bytes', Buffer.from(jwk.x, 'base64url')],
    ['JWKS x as text', new TextEncoder().encode(jwk.x)],
  ]
  for (const [label, secret] of secrets) {
    for (const alg of ['HS256', 'HS512']) {
      const hs = await new SignJWT(real.claims).setProtectedHeader({ alg, typ: 'at+jwt', kid: String(real.header.kid) }).sign(secret)
      isUnauthorized(t, await get(t, app, `Bearer ${hs}`), `${alg} with the ${label}`, /not issued by this server/)
    }
  }
})

t.test('wrong typ, issuer, audience, or claims', async (t) => {
  const { app, config } = await testApp(t)
  const real = await realToken(app)
  const { key } = await serverKey(config)
  const header = { kid: real.header.kid, typ: 'at+jwt' }

  for (const typ of ['JWT', 'jwt', 'application/jwt']) {
    const wrongTyp = await signWith(key, real.claims, { ...header, typ })
    isUnauthorized(t, await get(t, app, `Bearer ${wrongTyp}`), `typ ${typ}`, /not issued by this server/)
  }
  const noTyp = await signWith(key, real.claims, { kid: real.header.kid })
  isUnauthorized(t, await get(t, app, `Bearer ${noTyp}`), 'no typ')
  const mediaTyp = await signWith(key, real.claims, { ...header, typ: 'application/at+jwt' })
  t.equal((await get(t, app, `Bearer ${mediaTyp}`)).statusCode, 200, 'typ application/at+jwt is the same type (RFC 9068 §2.1)')

  const cases: [string, JWTPayload][] = [
    ['wrong issuer', { ...real.claims, iss: 'https://evil.example' }],
    ['no issuer', without(real.claims, 'iss')],
    ['wrong audience', { ...real.claims, aud: 'https://other-api.example' }],
    ['no audience', without(real.claims, 'aud')],
    ['no jti', without(real.claims, 'jti')],
    ['no exp', without(real.claims, 'exp')],
    ['no client_id', without(real.claims, 'client_id')],
    ['sub is not the client', { ...real.claims, sub: 'cl_someone_else' }],
    ['scope is not a string', { ...real.claims, scope: ['read:projects'] }],
    ['unknown client', { ...real.claims, sub: 'cl_nobody', client_id: 'cl_nobody' }],
  ]
  for (const [label, claims] of cases) {
    const tok = await signWith(key, claims, header)
    isUnauthorized(t, await get(t, app, `Bearer ${tok}`), label)
  }
})

t.test('malformed Authorization headers', async (t) => {
  const { app } = await testApp(t)
  const real = await realToken(app)
  const cases: [string, string][] = [
    ['not a JWT', 'Bearer abc'],
    ['three garbage parts', 'Bearer a.b.c'],
    ['empty token', 'Bearer '],
    ['scheme only', 'Bearer'],
    ['two tokens', `Bearer ${real.token} ${real.token}`],
    ['illegal characters', 'Bearer {"alg":"none"}'],
    ['truncated', `Bearer ${real.token.slice(0, -10)}`],
    ['signature removed', `Bearer ${real.token.split('.').slice(0, 2).join('.')}.`],
    ['payload not JSON', `Bearer ${real.token.split('.')[0]}.${Buffer.from('not json').toString('base64url')}.${real.token.split('.')[2]}`],
  ]
  for (const [label, header] of cases) isUnauthorized(t, await get(t, app, header), label)
  // No bearer credentials at all: 401 with a Bearer challenge (RFC 6750 §3.1 leaves out the error code then).
  const none: [string, string | undefined][] = [
    ['no Authorization header', undefined],
    ['Basic instead of Bearer', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['token without a scheme', real.token],
  ]
  for (const [label, header] of none) {
    const res = await get(t, app, header)
    t.equal(res.statusCode, 401, label)
    t.equal(res.json().code, 'unauthorized', label)
    t.match(res.json().hint, /Authorization: Bearer/, `${label}: says how to send a token`)
    t.match(res.headers['www-authenticate'], /^Bearer realm="studio-api"/, `${label}: Bearer challenge`)
  }
  t.equal((await get(t, app, `bearer ${real.token}`)).statusCode, 200, 'the scheme is case-insensitive')
})

t.test("a revoked client's tokens stop working within the status TTL", async (t) => {
  const { app } = await testApp(t, { clientStatusTtlSeconds: 1 })
  const real = await realToken(app)
  const other = await realToken(app)
  t.equal((await get(t, app, `Bearer ${real.token}`)).statusCode, 200, 'works before the revocation (status now cached)')
  t.equal(await app.auth.admin.clients.revoke(real.clientId, new Date().toISOString()), true)
  await sleep(1100)
  isUnauthorized(t, await get(t, app, `Bearer ${real.token}`), 'revoked', /revoked/)
  t.equal((await get(t, app, `Bearer ${other.token}`)).statusCode, 200, "another client's token still works")
})

t.test('a valid token without the scope is 403 insufficient_scope', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['read:leads', 'write:leads'])
  const res = await get(t, app, `Bearer ${token}`)
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'insufficient_scope')
  t.match(res.json().hint, /read:projects/)
  t.match(res.headers['www-authenticate'], /error="insufficient_scope", scope="read:projects"/)
})

t.test("a forged token never spends the victim client's budget", async (t) => {
  const { app } = await testApp(t, { rateLimits: { getProjects: { max: 5 } } })
  const victim = await realToken(app)
  const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
  const forged = await signWith(privateKey, victim.claims, { kid: victim.header.kid, typ: 'at+jwt' })

  const first = await get(t, app, `Bearer ${victim.token}`)
  t.equal(first.statusCode, 200)
  t.equal(first.headers['x-ratelimit-remaining'], '4')

  // From the victim's own address: forged requests are keyed by the address, not the client.
  for (let i = 1; i <= 5; i++) {
    const res = await get(t, app, `Bearer ${forged}`)
    isUnauthorized(t, res, `forged ${i}`)
    t.equal(res.headers['x-ratelimit-remaining'], String(5 - i), `forged ${i}: spends the address budget`)
  }
  const spent = await get(t, app, `Bearer ${forged}`)
  t.equal(spent.statusCode, 429, 'the forger runs out of its own (address) budget')
  t.match(spent.headers['retry-after'], /^\d+$/)

  const second = await get(t, app, `Bearer ${victim.token}`)
  t.equal(second.statusCode, 200, 'the victim is still served')
  t.equal(second.headers['x-ratelimit-remaining'], '3', "only the victim's own requests spent its budget")
})

t.test(
  "instances on one database with different PUBLIC_BASE_URLs: each refuses the other's tokens, says so to the caller, and warns once",
  async (t) => {
    const A = 'https://a.studio.example'
    const B = 'https://b.studio.example'
    const a = await testApp(t, { publicBaseUrl: A })
    const log = captureLog()
    // The same database and keys as `a` (its data folder; its schema on PostgreSQL), another base URL.
    const shared = {
      dataDir: a.config.dataDir,
      databaseUrl: a.config.databaseUrl,
      redisUrl: a.config.redisUrl,
      redisPrefix: a.config.redisPrefix,
    }
    const b = await testApp(t, { ...shared, publicBaseUrl: B }, { logger: { level: 'warn', stream: log.stream } })

    const fromA = await realToken(a.app)
    t.equal((await get(t, a.app, `Bearer ${fromA.token}`)).statusCode, 200, 'A accepts its own token')
    for (const attempt of [1, 2, 3]) {
      const res = await get(t, b.app, `Bearer ${fromA.token}`)
      isUnauthorized(
        t,
        res,
        `A's token at B, ${attempt}`,
        new RegExp(`issued as ${A}, and this server issues and accepts tokens as ${B}; request a new token from ${B}/api/token`),
      )
    }
    const warned = log.lines().filter((l) => l.token_issuer !== undefined)
    t.equal(warned.length, 1, 'one warning for the issuer, however many of its tokens arrive')
    t.equal(warned[0]?.level, 40)
    t.equal(warned[0]?.token_issuer, A)
    t.equal(warned[0]?.issuer, B)
    t.match(warned[0]?.msg, /must share PUBLIC_BASE_URL/)

    // B's own tokens work at B; a token of another key that names A is a forgery, not A's.
    const fromB = await realToken(b.app)
    t.equal((await get(t, b.app, `Bearer ${fromB.token}`)).statusCode, 200, 'B accepts its own token')
    const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
    const forged = await signWith(
      privateKey,
      { ...fromA.claims, iss: 'https://c.studio.example' },
      { kid: fromA.header.kid, typ: 'at+jwt' },
    )
    isUnauthorized(t, await get(t, b.app, `Bearer ${forged}`), 'another key naming another issuer', /not issued by this server/)
    // Signed with the key, the issuer ours, another claim wrong: the usual hint, no warning.
    const { key } = await serverKey(b.config)
    const otherAudience = await signWith(
      key,
      { ...fromB.claims, aud: 'https://other-api.example' },
      { kid: fromB.header.kid, typ: 'at+jwt' },
    )
    isUnauthorized(t, await get(t, b.app, `Bearer ${otherAudience}`), 'our issuer, another audience', /not valid here/)
    t.equal(log.lines().filter((l) => l.token_issuer !== undefined).length, 1, 'still one warning')
  },
)
