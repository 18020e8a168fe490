// Unit tests of the auth rules (no HTTP): scopes, RFC 8707 resources and audiences, Basic and
// Bearer parsing, claim and time checks, 401 hints, the client-status cache (with an injected
// clock), secret hashing, the MCP tools' per-tool authorization, the RFC 6749 text of errors and
// how addresses are counted.
import t from 'tap'
import { admit, challengeResult, securitySchemes } from '../../features/mcp/access.js'
import type { Caller } from '../../features/mcp/tool.js'
import { addressOf } from '../../lib/address.js'
import { type ClientStatus, ClientStatusCache } from '../../plugins/auth/client-status.js'
import { protectedResources } from '../../plugins/auth/resources.js'
import {
  accessTokenClaimsProblem,
  audienceIncludes,
  bearerChallenge,
  CLOCK_SKEW_SECONDS,
  grantResources,
  grantScopes,
  missingScopes,
  parseBasicAuth,
  parseBearer,
  tokenFailureHint,
  tokenTimesProblem,
} from '../../plugins/auth/rules.js'
import { hashSecret, newApiKeyId, newClientId, newSecret, secretMatches } from '../../plugins/auth/secrets.js'
import { VerifiedTokens } from '../../plugins/auth/verified-tokens.js'
import { oauthText } from '../../plugins/errors/oauth.js'
import { spec } from '../helpers/app.js'

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

t.test('grantResources and audienceIncludes (RFC 8707)', async (t) => {
  const r = protectedResources('https://api.studio.example')
  t.same(r, {
    api: 'https://api.studio.example',
    mcp: 'https://api.studio.example/mcp',
    all: [r.api, r.mcp],
    // RFC 9728 §3.1: the well-known path, then the resource's own path.
    metadataUrl: {
      api: 'https://api.studio.example/.well-known/oauth-protected-resource',
      mcp: 'https://api.studio.example/.well-known/oauth-protected-resource/mcp',
    },
  })
  t.same(grantResources(undefined, r.all, r.api), { ok: true, audience: [r.api] }, 'none requested: the API')
  t.same(grantResources(r.mcp, r.all, r.api), { ok: true, audience: [r.mcp] })
  t.same(grantResources('https://API.studio.example:443/', r.all, r.api), { ok: true, audience: [r.api] }, 'compared as URLs')
  t.same(grantResources([r.mcp, r.api, `${r.mcp}`], r.all, r.api), { ok: true, audience: [r.mcp, r.api] }, 'several, once each')
  for (const bad of ['https://other.example', `${r.mcp}/`, `${r.mcp}#x`, '/mcp', 'mcp', '', 'urn:studio:mcp']) {
    const g = grantResources(bad, r.all, r.api)
    t.equal(g.ok, false, `${JSON.stringify(bad)} is refused`)
    if (!g.ok) t.match(g.hint, `resource=${r.api} or resource=${r.mcp}`)
  }
  t.equal(grantResources([r.api, 'https://other.example'], r.all, r.api).ok, false, 'one unknown among known ones')

  t.ok(audienceIncludes(r.api, r.api))
  t.ok(audienceIncludes([r.api, r.mcp], r.mcp))
  t.notOk(audienceIncludes(r.api, r.mcp))
  t.notOk(audienceIncludes([r.api], r.mcp))
  t.notOk(audienceIncludes(undefined, r.api))
  t.notOk(audienceIncludes(`${r.api} ${r.mcp}`, r.mcp), 'a list is a JSON array, not a string')
})

t.test('per-tool authorization: securitySchemes, admission, challenge', async (t) => {
  const anonymous: Caller = { clientId: null, scopes: new Set(), owner: 'addr:10.0.0.1' }
  const reader: Caller = { clientId: 'cl_r', scopes: new Set(['read:leads']), owner: 'client:cl_r' }
  const publicTool = { anonymous: true }
  const mixed = { scope: 'write:leads', anonymous: true }
  const tokenOnly = { scope: 'read:leads', anonymous: false }

  t.same(securitySchemes(publicTool), [{ type: 'noauth' }])
  t.same(securitySchemes(mixed), [{ type: 'noauth' }, { type: 'oauth2', scopes: ['write:leads'] }])
  t.same(securitySchemes(tokenOnly), [{ type: 'oauth2', scopes: ['read:leads'] }])

  t.same(admit(publicTool, anonymous), { allowed: true, anonymous: false }, 'public: anyone, no anonymous budget')
  t.same(admit(publicTool, reader), { allowed: true, anonymous: false })
  t.same(admit(mixed, anonymous), { allowed: true, anonymous: true }, 'mixed without a token: in, on the anonymous budget')
  t.same(
    admit(mixed, reader),
    { allowed: false, refusal: 'insufficient_scope', scope: 'write:leads' },
    'a token that is sent must grant the scope',
  )
  t.same(admit(tokenOnly, anonymous), { allowed: false, refusal: 'no_token', scope: 'read:leads' })
  t.same(admit(tokenOnly, reader), { allowed: true, anonymous: false })

  const target = { resource: 'https://api.example/mcp', resourceMetadata: 'https://api.example/.well-known/oauth-protected-resource/mcp' }
  const none = challengeResult('recent_leads', { allowed: false, refusal: 'no_token', scope: 'read:leads' }, target)
  t.equal(none.isError, true)
  t.same(none._meta, { 'mcp/www_authenticate': [`Bearer scope="read:leads", resource_metadata="${target.resourceMetadata}"`] })
  t.match(
    (none.content[0] as { text: string }).text,
    /needs an access token with the scope read:leads\. Hint: .*resource=https:\/\/api\.example\/mcp/,
  )
  const short = challengeResult('recent_leads', { allowed: false, refusal: 'insufficient_scope', scope: 'read:leads' }, target)
  t.match(
    (short._meta?.['mcp/www_authenticate'] as string[] | undefined)?.[0],
    /^Bearer error="insufficient_scope", error_description="[^"]+", scope="read:leads", resource_metadata="/,
  )
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

/** A status cache (TTL 1 s) over `status`, recording each lookup, on a test clock. */
function cacheOver(status: Map<string, ClientStatus>, lookups: string[], now: () => number): ClientStatusCache {
  return new ClientStatusCache(
    async (id) => {
      lookups.push(id)
      const s = status.get(id)
      return s && { ...s }
    },
    1000,
    now,
  )
}

t.test('ClientStatusCache reads storage at most once per TTL', async (t) => {
  // Moved from isActive(id) to standing(id, generation) (rotation, finding 3): same assertions.
  let now = 1_000_000
  const status = new Map<string, ClientStatus>([
    ['cl_a', { active: true, generation: 0 }],
    ['cl_b', { active: true, generation: 0 }],
  ])
  const lookups: string[] = []
  const cache = cacheOver(status, lookups, () => now)
  t.equal(await cache.standing('cl_a', 0), 'valid')
  t.same(lookups, ['cl_a'])
  status.set('cl_a', { active: false, generation: 0 }) // revoked in storage
  now += 999
  t.equal(await cache.standing('cl_a', 0), 'valid', 'within the TTL the cached status holds')
  t.same(lookups, ['cl_a'], 'no second lookup within the TTL')
  now += 1
  t.equal(await cache.standing('cl_a', 0), 'revoked', 'at the TTL the revocation is seen')
  t.same(lookups, ['cl_a', 'cl_a'])
  now += 10_000
  t.equal(await cache.standing('cl_a', 0), 'revoked', 'a revoked client stays revoked')

  t.equal(await cache.standing('cl_b', 0), 'valid', 'clients are cached separately')
  t.equal(await cache.standing('cl_unknown', 0), 'revoked', 'an unknown client is not active')
  status.set('cl_b', { active: false, generation: 0 })
  cache.forget('cl_b')
  t.equal(await cache.standing('cl_b', 0), 'revoked', 'forget() makes the next check read storage')
  t.same(lookups, ['cl_a', 'cl_a', 'cl_a', 'cl_b', 'cl_unknown', 'cl_b'])
})

t.test('ClientStatusCache: a rotation ends older tokens within the TTL, newer ones work at once', async (t) => {
  let now = 0
  const status = new Map<string, ClientStatus>([['cl_r', { active: true, generation: 0 }]])
  const lookups: string[] = []
  const cache = cacheOver(status, lookups, () => now)
  t.equal(await cache.standing('cl_r', 0), 'valid', 'a token of generation 0')
  status.set('cl_r', { active: true, generation: 1 }) // rotated in storage (CLI or another instance)
  now += 500
  t.equal(await cache.standing('cl_r', 0), 'valid', 'the old token holds while the cached status is fresh')
  t.equal(await cache.standing('cl_r', 1), 'valid', 'a token issued after the rotation is newer than the cache: read again, valid')
  t.equal(lookups.length, 2, 'one extra lookup, for the newer token')
  t.equal(await cache.standing('cl_r', 0), 'rotated', 'and the old token is seen as rotated from then on')
  now += 5000
  t.equal(await cache.standing('cl_r', 0), 'rotated', 'after the TTL too')
  t.equal(await cache.standing('cl_r', 2), 'rotated', 'a generation storage never had is refused')
  status.set('cl_r', { active: false, generation: 1 })
  now += 1000
  t.equal(await cache.standing('cl_r', 1), 'revoked', 'revocation wins over the generation')
})

t.test('tokenTimesProblem: future iat, over-long or inverted lifetime', async (t) => {
  const now = 1_800_000_000
  const ttl = 3600
  const times = (iat: unknown, exp: unknown) => tokenTimesProblem({ iat, exp }, now, ttl)
  t.equal(times(now, now + ttl), null, 'a token as the server issues it')
  t.equal(times(now - 100, now + ttl - 100), null, 'issued earlier')
  t.equal(times(now + CLOCK_SKEW_SECONDS, now + CLOCK_SKEW_SECONDS + ttl), null, 'iat ahead by the allowed skew (another clock)')
  t.match(times(now + CLOCK_SKEW_SECONDS + 1, now + ttl), /future/, 'iat beyond the skew')
  t.match(times(now + 86_400, now + 86_400 + 60), /future/, 'a day ahead')
  t.match(times(now, now + 100 * 365 * 86_400), /longer/, 'a 100-year token')
  t.match(times(now, now + ttl + 1), /longer/, 'one second over the configured lifetime')
  t.match(times(now, now), /expires before/, 'exp equal to iat')
  t.match(times(now, now - 1), /expires before/, 'exp before iat')
  t.match(times(undefined, now + ttl), /numeric/, 'no iat')
  t.match(times(String(now), now + ttl), /numeric/, 'iat as text')
  t.match(times(now, null), /numeric/, 'no exp')
  t.ok(CLOCK_SKEW_SECONDS <= 60, 'the skew is small')
})

t.test('oauthText: only RFC 6749 §5.2 characters (%x20-21 / %x23-5B / %x5D-7E)', async (t) => {
  t.equal(oauthText('send "Authorization: Basic …"'), "send 'Authorization: Basic ...'")
  t.equal(oauthText('a\\b'), 'a/b', 'backslash')
  t.equal(oauthText('1–200 characters — ‘quoted’ “twice”'), "1-200 characters - 'quoted' 'twice'")
  t.equal(oauthText('café Zürich'), 'cafe Zurich', 'accents dropped')
  t.equal(oauthText('tab\tnew\nline\u0000'), 'tab new line ', 'control characters become spaces')
  t.equal(oauthText('東京'), '  ', 'what has no ASCII form becomes a space')
  const every = Array.from({ length: 0x250 }, (_, i) => String.fromCharCode(i)).join('')
  t.match(oauthText(every), /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/, 'whatever the input')
  t.match(
    bearerChallenge({ error_description: 'say "hi" \\ bye' }),
    /^Bearer error_description="say 'hi' \/ bye"$/,
    'challenges use it too',
  )
})

t.test('addressOf: IPv4 as it is, IPv6 as its /64', async (t) => {
  t.equal(addressOf('192.0.2.1'), '192.0.2.1')
  t.equal(addressOf('::ffff:192.0.2.1'), '192.0.2.1', 'IPv4 mapped into IPv6 is the IPv4 address')
  t.equal(addressOf('::FFFF:c000:201'), '192.0.2.1', 'however the mapped address is written')
  t.equal(addressOf('0:0:0:0:0:ffff:192.0.2.1'), '192.0.2.1', 'with its zeros spelled out')
  t.not(addressOf('::ffff:192.0.2.1'), addressOf('::ffff:192.0.2.2'), 'each mapped IPv4 address is a caller of its own')
  t.equal(addressOf('::ffff:1:c000:201'), '0:0:0:0::/64', 'not a mapped address: an IPv6 /64')
  t.equal(addressOf('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64')
  t.equal(addressOf('2001:db8:1:2::9'), '2001:db8:1:2::/64', 'the same /64')
  t.equal(addressOf('2001:DB8:0001:0002:ffff::1'), '2001:db8:1:2::/64', 'case and leading zeros do not matter')
  t.equal(addressOf('2001:db8::1'), '2001:db8:0:0::/64', ':: expanded')
  t.equal(addressOf('::1'), '0:0:0:0::/64')
  t.equal(addressOf('fe80::1%eth0'), 'fe80:0:0:0::/64', 'zone id ignored')
  t.equal(addressOf('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64', 'an embedded IPv4 tail')
  t.not(addressOf('2001:db8:1:2::1'), addressOf('2001:db8:1:3::1'), 'another /64 is another caller')
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

t.test("spec.scopes: the spec's OAuth2 scheme declares exactly the seed's three scopes", async (t) => {
  t.same([...spec.scopes].sort(), ['read:leads', 'read:projects', 'write:leads'])
})

t.test('verified tokens: kept until exp or the TTL, whichever is sooner; the oldest goes when full', async (t) => {
  const entry = (clientId: string) => ({ payload: { client_id: clientId }, clientId, scopes: new Set(['read:projects']), generation: 0 })
  const now = 1_700_000_000_000
  const cache = new VerifiedTokens(2, 60_000)
  const exp = now / 1000 + 30
  t.equal(cache.set('a.b.c', entry('one'), exp, now).until, exp * 1000, 'a token expiring within the TTL: until its exp')
  t.equal(cache.get('a.b.c', now + 29_999)?.clientId, 'one', 'found before exp')
  t.equal(cache.get('a.b.c', now + 30_000), undefined, 'gone at exp')
  t.equal(cache.size, 0, 'and dropped')
  t.equal(cache.set('x', entry('x'), now / 1000 + 3600, now).until, now + 60_000, 'a long-lived token: the TTL')
  t.equal(cache.get('x', now + 60_000), undefined, 'gone after the TTL')
  cache.set('p', entry('p'), now / 1000 + 3600, now)
  cache.set('q', entry('q'), now / 1000 + 3600, now)
  cache.set('r', entry('r'), now / 1000 + 3600, now)
  t.equal(cache.size, 2, 'bounded')
  t.equal(cache.get('p', now), undefined, 'the oldest went first')
  t.equal(cache.get('r', now)?.clientId, 'r')
  t.equal(cache.get('r.', now), undefined, 'only the exact token text matches')
  const none = new VerifiedTokens(0, 60_000)
  none.set('p', entry('p'), now / 1000 + 3600, now)
  t.equal(none.size, 0, 'size 0 keeps nothing')
})
