// The spec and the server agree on what an independent validator checks: every status an
// operation answers is declared for it (the statuses any operation can answer, driven on each),
// and every response carries the rate-limit headers but the two probes the spec names.
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { basic, call, newClient, RATE_LIMIT_EXEMPT, responseSpec, spec, testApp, tokenFor } from '../helpers/app.js'
import { exchange } from '../helpers/socket.js'

/** Every operation with a request that reaches it (a token with its scope, a body it takes). */
async function requests(app: FastifyInstance) {
  const { token } = await tokenFor(app, [...spec.scopes])
  const client = await newClient(app, ['read:projects'])
  const bearer = { authorization: `Bearer ${token}` }
  const lead = { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0958' }
  return [...spec.operations.values()].map((op) => {
    const base = { method: op.method.toUpperCase() as 'GET' | 'POST', url: op.path }
    if (op.operationId === 'issueToken') {
      return {
        ...base,
        headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      }
    }
    if (op.operationId === 'submitLead') return { ...base, headers: { ...bearer, 'content-type': 'application/json' }, payload: lead }
    return { ...base, headers: bearer }
  })
}

const declared = (t: Test, method: string, url: string, status: number, why: string) =>
  t.ok(responseSpec(method, url, status).declared, `${method} ${url} → ${status} (${why}) is declared in the spec`)

t.test('every operation: 200, 429 and 503 (closing) are declared and match the spec', async (t) => {
  // A budget of 1 each (2 for the token endpoint, which also issues the test's own token).
  const budgets = Object.fromEntries([...spec.operations.keys()].map((id) => [id, { max: id === 'issueToken' ? 2 : 1 }]))
  const { app } = await testApp(t, { rateLimits: budgets })
  for (const req of await requests(app)) {
    t.equal((await call(t, app, req)).statusCode, 200, `${req.method} ${req.url}: served`)
    t.equal((await call(t, app, req)).statusCode, 429, `${req.method} ${req.url}: its budget of 1 spent`)
  }
  const { app: closing } = await testApp(t)
  const reqs = await requests(closing)
  closing.lifecycle.closing = true
  for (const req of reqs) t.equal((await call(t, closing, req)).statusCode, 503, `${req.method} ${req.url}: 503 while closing`)
  closing.lifecycle.closing = false
})

t.test('every operation: 401 and 403 where it needs a token', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['read:projects'])
  const { token: other } = await tokenFor(app, ['read:leads'])
  for (const op of spec.operations.values()) {
    // Operations that take a bearer token (the token endpoint's own client authentication,
    // `ClientBasic`, answers RFC 6749 errors: test/app/token.test.ts).
    if (!op.security?.some((requirement) => 'OAuth2' in requirement)) continue
    const method = op.method.toUpperCase() as 'GET' | 'POST'
    t.equal((await call(t, app, { method, url: op.path })).statusCode, 401, `${op.operationId}: no token`)
    const scoped = op.operationId === 'getProjects' ? other : token
    t.equal(
      (await call(t, app, { method, url: op.path, headers: { authorization: `Bearer ${scoped}` } })).statusCode,
      403,
      `${op.operationId}: another scope`,
    )
  }
})

t.test('getProjects answers 400 for an If-None-Match over 512 characters, as declared', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['read:projects'])
  const res = await call(t, app, {
    url: '/project_metadata.json',
    headers: { authorization: `Bearer ${token}`, 'if-none-match': `"${'a'.repeat(600)}"` },
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.match(res.json().message, /If-None-Match|if-none-match/i)
})

t.test('every operation: what the server answers before routing (no Host, headers too large) is declared', async (t) => {
  const { app } = await testApp(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as { port: number }).port
  for (const op of spec.operations.values()) {
    const method = op.method.toUpperCase()
    const noHost = await exchange(port, `${method} ${op.path} HTTP/1.1\r\nContent-Length: 0\r\n\r\n`)
    t.equal(noHost?.status, 400, `${op.operationId}: no Host`)
    declared(t, method, op.path, 400, 'no Host')
    const big = await exchange(port, `${method} ${op.path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    t.equal(big?.status, 431, `${op.operationId}: headers too large`)
    declared(t, method, op.path, 431, 'headers too large')
    declared(t, method, op.path, 408, 'request timeout')
  }
})

t.test('the rate-limit headers: on every response but the probes, as the spec says', async (t) => {
  const description = String(spec.document.info.description)
  for (const path of RATE_LIMIT_EXEMPT) t.match(description, path, `the spec names ${path} as exempt`)

  const { app } = await testApp(t, { corsOrigins: ['https://studio.example'] })
  for (const path of RATE_LIMIT_EXEMPT) {
    const res = await app.inject({ url: path })
    t.notOk(res.headers['x-ratelimit-limit'], `${path}: no budget limits the load balancer's probes`)
  }
  // Responses that no route-level limiter counted: still counted, with headers.
  const cases: [string, InjectOptions][] = [
    [
      'a CORS preflight',
      {
        method: 'OPTIONS',
        url: '/scripts/enquiry_backend.php',
        headers: { origin: 'https://studio.example', 'access-control-request-method': 'POST' },
      },
    ],
    [
      'a body too large for an unknown path',
      { method: 'POST', url: '/nope', headers: { 'content-type': 'application/json' }, payload: `"${'a'.repeat(70_000)}"` },
    ],
    ['an unknown content type on an unknown path', { method: 'POST', url: '/nope', headers: { 'content-type': 'foo/bar' }, payload: 'x' }],
    [
      'a malformed body on an unknown path',
      { method: 'POST', url: '/nope', headers: { 'content-type': 'application/json' }, payload: '{' },
    ],
    ['the docs', { url: '/docs' }],
    ['an image', { url: '/images/aoyama-concept-store-tokyo.svg' }],
  ]
  for (const [label, opts] of cases) {
    const res = await app.inject(opts)
    t.match(res.headers['x-ratelimit-limit'], /^\d+$/, `${label} (${res.statusCode}): X-RateLimit-Limit`)
    t.match(res.headers['x-ratelimit-remaining'], /^\d+$/, `${label}: X-RateLimit-Remaining`)
    t.match(res.headers['x-ratelimit-reset'], /^\d+$/, `${label}: X-RateLimit-Reset`)
  }
})
