// The ApiKey scheme: no operation of the spec lists it, so no operation accepts it; listing it
// on an operation (a variant of the spec) is all it takes to accept X-API-Key there.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { createApiKey } from '../../plugins/auth/admin.js'
import { type OpenApiDocument, Spec } from '../../plugins/spec/document.js'
import { call, spec as shipped, testApp, tokenFor } from '../helpers/app.js'

const URL_ = '/project_metadata.json'

function variant(): Spec {
  const doc: OpenApiDocument = structuredClone(shipped.document)
  const op = doc.paths[URL_]?.get
  if (!op) throw new Error('the spec has no getProjects')
  op.security = [{ OAuth2: ['read:projects'] }, { ApiKey: ['read:projects'] }]
  return new Spec(doc)
}

const keyFor = (app: FastifyInstance, scopes: string[]) => createApiKey(app.auth.admin, { name: 'integration', scopes })

t.test('the unmodified spec lists ApiKey nowhere, and refuses X-API-Key', async (t) => {
  const spec = shipped.document
  const listed = Object.values(spec.paths).flatMap((item) =>
    Object.values(item).flatMap((op) => (op.security ?? []).flatMap((r) => Object.keys(r))),
  )
  t.ok(listed.includes('OAuth2'), 'operations list OAuth2')
  t.notOk(listed.includes('ApiKey'), 'no operation lists ApiKey')
  t.ok(spec.components.securitySchemes.ApiKey, 'the scheme is still declared')

  const { app } = await testApp(t)
  const key = await keyFor(app, ['read:projects', 'read:leads'])
  const res = await call(t, app, { url: URL_, headers: { 'x-api-key': key.api_key } })
  t.equal(res.statusCode, 401, 'a valid key with the scope is refused')
  t.equal(res.json().code, 'unauthorized')
  t.match(res.json().hint, /Authorization: Bearer/)
  const leads = await call(t, app, { url: '/leads.json', headers: { 'x-api-key': key.api_key } })
  t.equal(leads.statusCode, 401, 'on every operation')
})

t.test('with ApiKey listed on getProjects, a key with read:projects is accepted', async (t) => {
  const { app } = await testApp(t, {}, { spec: variant() })
  const key = await keyFor(app, ['read:projects'])
  t.match(key.api_key, /^sk_/)
  t.match(key.id, /^key_/)
  const res = await call(t, app, { url: URL_, headers: { 'x-api-key': key.api_key } })
  t.equal(res.statusCode, 200)
  t.ok(Array.isArray(res.json()) && res.json().length >= 20, 'the catalogue')

  // The key is stored only as a hash.
  const rows = await app.auth.admin.clients.listApiKeys()
  t.equal(rows.length, 1)
  t.not(rows[0]?.key_hash, key.api_key)
  t.notOk(JSON.stringify(rows).includes(key.api_key), 'the key itself is not stored')

  // Other operations still do not list it.
  const leadsKey = await keyFor(app, ['read:leads'])
  t.equal(
    (await call(t, app, { url: '/leads.json', headers: { 'x-api-key': leadsKey.api_key } })).statusCode,
    401,
    'getLeads does not accept keys',
  )
})

t.test('unknown, out-of-scope and revoked keys', async (t) => {
  const { app } = await testApp(t, {}, { spec: variant() })
  const good = await keyFor(app, ['read:projects'])

  const unknown = await call(t, app, { url: URL_, headers: { 'x-api-key': `sk_${'A'.repeat(43)}` } })
  t.equal(unknown.statusCode, 401)
  t.equal(unknown.json().code, 'unauthorized')
  t.match(unknown.json().hint, /API key is unknown or revoked/)
  const empty = await call(t, app, { url: URL_, headers: { 'x-api-key': '' } })
  t.equal(empty.statusCode, 401, 'an empty key')

  const noScope = await keyFor(app, ['read:leads', 'write:leads'])
  const forbidden = await call(t, app, { url: URL_, headers: { 'x-api-key': noScope.api_key } })
  t.equal(forbidden.statusCode, 403)
  t.equal(forbidden.json().code, 'insufficient_scope')
  t.match(forbidden.json().hint, /API key created with the scope read:projects/)

  t.equal((await call(t, app, { url: URL_, headers: { 'x-api-key': good.api_key } })).statusCode, 200, 'before revocation')
  t.equal(await app.auth.admin.clients.revokeApiKey(good.id, new Date().toISOString()), true)
  const revoked = await call(t, app, { url: URL_, headers: { 'x-api-key': good.api_key } })
  t.equal(revoked.statusCode, 401, 'revoked: refused at once')
  t.match(revoked.json().hint, /unknown or revoked/)
})

t.test('OAuth2 still works on the variant, and a key never rescues a bad token', async (t) => {
  const { app } = await testApp(t, {}, { spec: variant() })
  const { token } = await tokenFor(app, ['read:projects'])
  t.equal((await call(t, app, { url: URL_, headers: { authorization: `Bearer ${token}` } })).statusCode, 200)
  const wrongScope = await tokenFor(app, ['read:leads'])
  const res = await call(t, app, { url: URL_, headers: { authorization: `Bearer ${wrongScope.token}` } })
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'insufficient_scope')
  t.equal((await call(t, app, { url: URL_ })).statusCode, 401, 'no credentials')

  const key = await keyFor(app, ['read:projects'])
  const both = await call(t, app, { url: URL_, headers: { authorization: 'Bearer not.a.token', 'x-api-key': key.api_key } })
  t.equal(both.statusCode, 401, 'a bad bearer token is refused even with a good key alongside')
})

t.test('the rate-limit key of an API key is the key id', async (t) => {
  const { app } = await testApp(t, { rateLimits: { getProjects: { max: 5 } } }, { spec: variant() })
  const a = await keyFor(app, ['read:projects'])
  const b = await keyFor(app, ['read:projects'])
  const remaining = async (headers: Record<string, string>) => {
    const res = await call(t, app, { url: URL_, headers })
    return [res.statusCode, res.headers['x-ratelimit-limit'], res.headers['x-ratelimit-remaining']]
  }
  t.same(await remaining({ 'x-api-key': a.api_key }), [200, '5', '4'])
  t.same(await remaining({ 'x-api-key': a.api_key }), [200, '5', '3'])
  t.same(await remaining({ 'x-api-key': b.api_key }), [200, '5', '4'], 'another key from the same address has its own budget')
  t.same(await remaining({}), [401, '5', '4'], 'the anonymous address has its own budget')
  t.same(await remaining({ 'x-api-key': 'sk_unknown' }), [401, '5', '3'], 'an unknown key is keyed by the address')
  for (let i = 0; i < 3; i++) await remaining({ 'x-api-key': a.api_key })
  t.same(await remaining({ 'x-api-key': a.api_key }), [429, '5', '0'], 'key a spent its budget')
  t.same(await remaining({ 'x-api-key': b.api_key }), [200, '5', '3'], 'key b has not')
})
