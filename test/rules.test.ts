// Unit tests of the auth rules (no HTTP): scopes, Basic and Bearer parsing, claim checks,
// 401 hints, the client-status cache (with an injected clock) and secret hashing.
import t from 'tap'
import { ClientStatusCache } from '../plugins/auth/client-status.js'
import {
  ALL_SCOPES,
  accessTokenClaimsProblem,
  grantScopes,
  missingScopes,
  parseBasicAuth,
  parseBearer,
  tokenFailureHint,
} from '../plugins/auth/rules.js'
import { hashSecret, newApiKeyId, newClientId, newSecret, secretMatches } from '../plugins/auth/secrets.js'

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64')
/** application/x-www-form-urlencoded encoding of one value (RFC 6749 §2.3.1, Appendix B). */
const form = (s: string) => new URLSearchParams({ v: s }).toString().slice(2)

t.test('missingScopes', async (t) => {
  t.same(missingScopes(new Set(['read:projects']), ['read:projects']), [])
  t.same(missingScopes(new Set(['read:projects', 'read:leads']), []), [], 'nothing required, nothing missing')
  t.same(missingScopes(new Set(), ['read:leads']), ['read:leads'])
  t.same(missingScopes(new Set(['read:leads']), ['read:leads', 'write:leads', 'read:projects']), ['write:leads', 'read:projects'])
  t.same(missingScopes(new Set(['read:leads']), ['READ:LEADS']), ['READ:LEADS'], 'scopes are case-sensitive')
})

t.test('grantScopes', async (t) => {
  const allowed = ['read:projects', 'read:leads']
  t.same(grantScopes(undefined, allowed), { ok: true, scopes: allowed }, 'absent scope: everything the client may have')
  t.same(grantScopes('read:leads', allowed), { ok: true, scopes: ['read:leads'] }, 'a subset')
  t.same(grantScopes('read:leads read:projects', allowed), { ok: true, scopes: ['read:leads', 'read:projects'] })
  t.same(grantScopes('read:leads read:leads', allowed), { ok: true, scopes: ['read:leads'] }, 'duplicates collapse')

  const refused = grantScopes('read:leads write:leads', allowed)
  t.equal(refused.ok, false)
  if (!refused.ok) {
    t.match(refused.reason, /write:leads/, 'the reason names the refused scope')
    t.notMatch(refused.reason, /read:leads/, 'and only the refused scope')
    t.match(refused.hint, /read:projects read:leads/, 'the hint lists what the client may have')
  }
  const unknown = grantScopes('admin', allowed)
  t.equal(unknown.ok, false)

  for (const malformed of ['', ' ', 'read:leads  read:projects', ' read:leads', 'read:leads ', 'read:leads\tread:projects']) {
    const g = grantScopes(malformed, allowed)
    t.equal(g.ok, false, `malformed scope ${JSON.stringify(malformed)} is refused`)
    if (!g.ok && malformed !== 'read:leads\tread:projects') t.match(g.reason, /malformed/, `${JSON.stringify(malformed)}: says malformed`)
  }
  const none = grantScopes('read:leads', [])
  t.equal(none.ok, false)
  if (!none.ok) t.match(none.hint, /\(none\)/)
})

t.test('parseBasicAuth', async (t) => {
  t.equal(parseBasicAuth(undefined), undefined, 'no header')
  t.equal(parseBasicAuth('Bearer abc.def.ghi'), undefined, 'another scheme is not Basic')
  t.same(parseBasicAuth(`Basic ${b64('cl_abc:s3cret')}`), { clientId: 'cl_abc', secret: 's3cret' })
  t.same(parseBasicAuth(`basic ${b64('cl_abc:s3cret')}`), { clientId: 'cl_abc', secret: 's3cret' }, 'scheme is case-insensitive')
  t.same(parseBasicAuth(`Basic ${b64('cl_abc:s3c:ret')}`), { clientId: 'cl_abc', secret: 's3c:ret' }, 'split at the first colon only')

  // RFC 6749 §2.3.1: both parts are form-urlencoded before base64.
  const id = 'studio:web+1'
  const secret = 'p@ss word/+%&=:é'
  t.same(parseBasicAuth(`Basic ${b64(`${form(id)}:${form(secret)}`)}`), { clientId: id, secret }, 'form-urlencoded parts decoded')
  t.same(
    parseBasicAuth(`Basic ${b64(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`)}`),
    { clientId: id, secret },
    'percent-encoded spaces (%20) decode too',
  )
  t.same(parseBasicAuth(`Basic ${b64('a+b:c+d')}`), { clientId: 'a b', secret: 'c d' }, '+ is a space')

  t.equal(parseBasicAuth('Basic'), null, 'no credentials')
  t.equal(parseBasicAuth('Basic '), null, 'empty credentials')
  t.equal(parseBasicAuth('Basic !!!notbase64'), null, 'not base64')
  t.equal(parseBasicAuth(`Basic ${b64('no-colon')}`), null, 'no colon')
  t.equal(parseBasicAuth(`Basic ${b64(':secret')}`), null, 'empty client id')
  t.equal(parseBasicAuth(`Basic ${b64('id%ZZ:secret')}`), null, 'bad percent-encoding in the id')
  t.equal(parseBasicAuth(`Basic ${b64('id:sec%E0%A4')}`), null, 'bad percent-encoding in the secret')
  t.equal(parseBasicAuth(`Basic ${b64('a:b')} extra`), null, 'trailing garbage')
})

t.test('parseBearer', async (t) => {
  t.equal(parseBearer(undefined), undefined)
  t.equal(parseBearer(`Basic ${b64('a:b')}`), undefined, 'not a bearer header')
  t.equal(parseBearer('Bearer abc.def.ghi'), 'abc.def.ghi')
  t.equal(parseBearer('bearer abc.def.ghi'), 'abc.def.ghi', 'scheme is case-insensitive')
  t.equal(parseBearer('Bearer   abc.def.ghi  '), 'abc.def.ghi', 'extra spaces tolerated')
  t.equal(parseBearer('Bearer abc-_~+/=='), 'abc-_~+/==', 'every b64token character (RFC 6750 §2.1)')
  for (const bad of ['Bearer', 'Bearer ', 'Bearer a b', 'Bearer a,b', 'Bearer "abc"', 'Bearer =abc', 'Bearer\tabc', 'Bearerabc']) {
    const got = parseBearer(bad)
    if (bad === 'Bearerabc') t.equal(got, undefined, `${JSON.stringify(bad)} is another scheme`)
    else t.equal(got, null, `${JSON.stringify(bad)} is a malformed bearer header`)
  }
})

t.test('accessTokenClaimsProblem', async (t) => {
  const good = { sub: 'cl_1', client_id: 'cl_1', scope: 'read:projects', jti: 'x', iat: 1, exp: 2 }
  t.equal(accessTokenClaimsProblem(good), null)
  t.equal(accessTokenClaimsProblem({ ...good, scope: '' }), null, 'an empty scope string is still a scope claim')
  t.match(accessTokenClaimsProblem({ ...good, client_id: undefined }), /client_id/)
  t.match(accessTokenClaimsProblem({ ...good, client_id: '' }), /client_id/)
  t.match(accessTokenClaimsProblem({ ...good, client_id: 42 }), /client_id/)
  t.match(accessTokenClaimsProblem({ ...good, sub: 'cl_2' }), /subject/)
  t.match(accessTokenClaimsProblem({ ...good, sub: undefined }), /subject/)
  t.match(accessTokenClaimsProblem({ ...good, scope: ['read:projects'] }), /scope/)
  t.match(accessTokenClaimsProblem({ ...good, scope: undefined }), /scope/)
})

t.test('tokenFailureHint', async (t) => {
  t.match(tokenFailureHint('FAST_JWT_EXPIRED'), /expired/)
  t.match(tokenFailureHint('FAST_JWT_INACTIVE'), /not valid yet/)
  t.match(tokenFailureHint('FAST_JWT_MALFORMED'), /malformed/)
  t.match(tokenFailureHint('FAST_JWT_INVALID_PAYLOAD'), /malformed/)
  for (const code of ['FAST_JWT_INVALID_ALGORITHM', 'FAST_JWT_MISSING_SIGNATURE', 'FAST_JWT_INVALID_SIGNATURE', 'FAST_JWT_INVALID_TYPE']) {
    t.match(tokenFailureHint(code), /not issued by this server/, code)
  }
  t.match(tokenFailureHint('FAST_JWT_INVALID_CLAIM_VALUE'), /not valid here/)
  t.match(tokenFailureHint(undefined), /not valid here/)
  for (const code of ['FAST_JWT_EXPIRED', 'FAST_JWT_MALFORMED', 'FAST_JWT_INVALID_SIGNATURE', undefined]) {
    t.match(tokenFailureHint(code), /\/api\/token/, `${code}: says where to get a token`)
  }
})

t.test('ClientStatusCache reads storage at most once per TTL', async (t) => {
  let now = 1_000_000
  const active = new Map([
    ['cl_a', true],
    ['cl_b', true],
  ])
  const lookups: string[] = []
  const cache = new ClientStatusCache(
    async (id) => {
      lookups.push(id)
      return active.get(id) ?? false
    },
    1000,
    () => now,
  )
  t.equal(await cache.isActive('cl_a'), true)
  t.same(lookups, ['cl_a'])
  active.set('cl_a', false) // revoked in storage
  now += 999
  t.equal(await cache.isActive('cl_a'), true, 'within the TTL the cached status holds')
  t.same(lookups, ['cl_a'], 'no second lookup within the TTL')
  now += 1
  t.equal(await cache.isActive('cl_a'), false, 'at the TTL the revocation is seen')
  t.same(lookups, ['cl_a', 'cl_a'])
  now += 10_000
  t.equal(await cache.isActive('cl_a'), false, 'a revoked client stays revoked')

  t.equal(await cache.isActive('cl_b'), true, 'clients are cached separately')
  t.equal(await cache.isActive('cl_unknown'), false, 'an unknown client is not active')
  active.set('cl_b', false)
  cache.forget('cl_b')
  t.equal(await cache.isActive('cl_b'), false, 'forget() makes the next check read storage')
  t.same(lookups, ['cl_a', 'cl_a', 'cl_a', 'cl_b', 'cl_unknown', 'cl_b'])
})

t.test('secrets: keyed hash, constant-time match', async (t) => {
  const pepper = 'p'.repeat(43)
  const secret = newSecret()
  t.match(secret, /^[A-Za-z0-9_-]{43}$/, '256-bit base64url secret')
  t.not(newSecret(), secret, 'secrets are random')
  t.match(newClientId(), /^cl_[A-Za-z0-9_-]{16}$/)
  t.match(newApiKeyId(), /^key_[A-Za-z0-9_-]{12}$/)

  const hash = hashSecret(pepper, secret)
  t.match(hash, /^[0-9a-f]{64}$/)
  t.not(hash, secret, 'the hash is not the secret')
  t.notMatch(hash, secret)
  t.equal(hashSecret(pepper, secret), hash, 'deterministic under one pepper')
  t.not(hashSecret('q'.repeat(43), secret), hash, 'keyed: another pepper gives another hash')

  t.equal(secretMatches(pepper, secret, hash), true)
  t.equal(secretMatches(pepper, `${secret}x`, hash), false, 'a different secret')
  t.equal(secretMatches(pepper, '', hash), false, 'an empty secret')
  t.equal(secretMatches('q'.repeat(43), secret, hash), false, 'the right secret under another pepper')
  t.equal(secretMatches(pepper, secret, hash.slice(0, 32)), false, 'a truncated stored hash never matches (no throw)')
  t.equal(secretMatches(pepper, secret, '0'.repeat(64)), false, 'the dummy hash never matches')
  t.equal(secretMatches(pepper, secret, hash.toUpperCase()), true, 'hex is read case-insensitively')
})

t.test("ALL_SCOPES: the spec's OAuth2 scheme declares exactly the seed's three scopes", async (t) => {
  t.same([...ALL_SCOPES].sort(), ['read:leads', 'read:projects', 'write:leads'])
})
