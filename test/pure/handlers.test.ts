// Handlers get their dependencies, not Fastify: here they run with plain fakes, without HTTP.
import type { FastifyReply, FastifyRequest } from 'fastify'
import t from 'tap'
import { createConfig } from '../../config.js'
import type { Deps } from '../../handlers/deps.js'
import { getProjects, ifNoneMatchHits } from '../../handlers/getProjects.js'
import { issueToken } from '../../handlers/issueToken.js'
import { submitLead } from '../../handlers/submitLead.js'
import { AppError } from '../../plugins/errors/codes.js'

/** A reply that records what the handler did with it. */
function fakeReply() {
  const seen = { status: 200, headers: {} as Record<string, string>, body: undefined as unknown }
  const reply = {
    code(status: number) {
      seen.status = status
      return reply
    },
    header(name: string, value: string) {
      seen.headers[name.toLowerCase()] = value
      return reply
    },
    type(value: string) {
      seen.headers['content-type'] = value
      return reply
    },
    send(body?: unknown) {
      seen.body = body
      return reply
    },
  }
  return { reply: reply as unknown as FastifyReply, seen }
}

const deps = (over: Partial<Deps>): Deps => ({ config: createConfig({ dataDir: '/nonexistent' }), ...over }) as Deps
const request = (over: object) => over as unknown as FastifyRequest

t.test('getProjects: 404 with no catalogue, 200 with ETag, 304 on a match', async (t) => {
  let view: { etag: string; body: Buffer; projects: [] } | undefined
  const handler = getProjects.handler(deps({ catalogue: { current: () => view } as unknown as Deps['catalogue'] }))

  await t.rejects(handler(request({ headers: {} }), fakeReply().reply), { code: 'not_found', statusCode: 404 })

  view = { etag: '"v1"', body: Buffer.from('[]'), projects: [] }
  const ok = fakeReply()
  await handler(request({ headers: {} }), ok.reply)
  t.equal(ok.seen.status, 200)
  t.equal(ok.seen.headers.etag, '"v1"')
  t.equal(ok.seen.headers['cache-control'], 'private, max-age=60')
  t.same(ok.seen.body, Buffer.from('[]'))

  const cached = fakeReply()
  await handler(request({ headers: { 'if-none-match': 'W/"v1"' } }), cached.reply)
  t.equal(cached.seen.status, 304)
  t.equal(cached.seen.body, undefined)

  t.ok(ifNoneMatchHits('"a", "v1"', '"v1"'))
  t.ok(ifNoneMatchHits('*', '"v1"'))
  t.notOk(ifNoneMatchHits('"v0"', '"v1"'))
  t.notOk(ifNoneMatchHits(undefined, '"v1"'))
})

t.test('submitLead: hands the lead to the leads service with the right owner, key, source and consent', async (t) => {
  const calls: unknown[][] = []
  const leads = {
    submit: async (...args: unknown[]) => {
      calls.push(args)
      return { id: 'lead-1', received_at: '2026-11-22T10:00:00.000Z', status: 'received' as const }
    },
  }
  const handler = submitLead.handler(deps({ leads: leads as unknown as Deps['leads'] }))
  const lead = { name: 'Ada', email: 'ada@example.com', phone: '+44 20 7946 0958' }
  const receipt = await handler(
    request({
      body: lead,
      ip: '10.0.0.1',
      headers: { 'idempotency-key': 'k1' },
      principal: { clientId: 'cl_x', scopes: new Set(), via: 'OAuth2' },
    }),
    fakeReply().reply,
  )
  t.same(receipt, { id: 'lead-1', received_at: '2026-11-22T10:00:00.000Z', status: 'received' })
  await handler(request({ body: { ...lead, consent: true }, ip: '10.0.0.2', headers: {}, principal: null }), fakeReply().reply)
  t.same(calls, [
    [lead, { clientId: 'cl_x', owner: 'client:cl_x', source: 'api', consent: false }, 'k1'],
    [lead, { clientId: null, owner: 'addr:10.0.0.2', source: 'form', consent: true }, undefined],
  ])
  // The website form without the person's consent: refused, nothing handed on.
  await t.rejects(handler(request({ body: lead, ip: '10.0.0.3', headers: {}, principal: null }), fakeReply().reply), {
    code: 'invalid_request',
  })
  t.equal(calls.length, 2)
})

t.test('issueToken: grant and client rules, failures counted, the guard respected', async (t) => {
  const client = { id: 'cl_a', name: 'A', scopes: 'read:projects read:leads', secret_hash: '', created_at: '', revoked_at: null }
  const failures: string[] = []
  const audiences: (readonly string[])[] = []
  const api = 'https://api.example'
  let refusal: AppError | undefined
  const handler = issueToken.handler(
    deps({
      auth: {
        authenticateClient: async (id: string, secret: string) => (id === 'cl_a' && secret === 'right' ? client : undefined),
        resources: { api, mcp: `${api}/mcp`, all: [api, `${api}/mcp`] },
        issue: (_c: unknown, scopes: string[], audience: readonly string[]) => {
          audiences.push(audience)
          return {
            access_token: 'tok',
            token_type: 'Bearer',
            expires_in: 3600,
            scope: scopes.join(' '),
          }
        },
      } as unknown as Deps['auth'],
      // Every attempt counts as a failure until the handler releases it.
      authFailures: {
        attempt: async (_r, id) => {
          if (refusal) return refusal
          failures.push(id)
          return {
            release: () => {
              failures.splice(failures.lastIndexOf(id), 1)
            },
          }
        },
      },
    }),
  )
  const form = (body: object, authorization?: string) => request({ body, headers: authorization ? { authorization } : {} })
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`

  const ok = fakeReply()
  t.same(await handler(form({ grant_type: 'client_credentials', scope: 'read:leads' }, basic('cl_a', 'right')), ok.reply), {
    access_token: 'tok',
    token_type: 'Bearer',
    expires_in: 3600,
    scope: 'read:leads',
  })
  t.equal(ok.seen.headers['cache-control'], 'no-store')
  // RFC 8707: no resource means the API; a named one (or several, repeated in the form) is the audience.
  await handler(form({ grant_type: 'client_credentials', resource: `${api}/mcp` }, basic('cl_a', 'right')), fakeReply().reply)
  await handler(form({ grant_type: 'client_credentials', resource: [`${api}/`, `${api}/mcp`] }, basic('cl_a', 'right')), fakeReply().reply)
  t.same(audiences, [[api], [`${api}/mcp`], [api, `${api}/mcp`]], 'the audience of each token')

  const refused = async (body: object, authorization: string | undefined, code: string) => {
    const err = await handler(form(body, authorization), fakeReply().reply).then(
      () => undefined,
      (e: unknown) => e,
    )
    t.ok(err instanceof AppError, `${code}: an AppError`)
    t.equal((err as AppError).code, code)
  }
  await refused({ grant_type: 'password' }, basic('cl_a', 'right'), 'unsupported_grant_type')
  await refused({ grant_type: 'client_credentials', client_id: 'cl_a', client_secret: 'right' }, basic('cl_a', 'right'), 'invalid_request')
  await refused({ grant_type: 'client_credentials' }, undefined, 'invalid_client')
  await refused({ grant_type: 'client_credentials', scope: 'write:leads' }, basic('cl_a', 'right'), 'invalid_scope')
  await refused({ grant_type: 'client_credentials', resource: 'https://other.example' }, basic('cl_a', 'right'), 'invalid_target')
  t.equal(audiences.length, 3, 'no token for a refused resource')
  t.same(failures, [], 'no failed authentication so far')
  await refused({ grant_type: 'client_credentials' }, basic('cl_a', 'wrong'), 'invalid_client')
  t.same(failures, ['cl_a'], 'a wrong secret is counted against the client id')
  refusal = new AppError('rate_limited', 'Too many failed authentications of this client from this address.')
  await refused({ grant_type: 'client_credentials' }, basic('cl_a', 'right'), 'rate_limited')
})
