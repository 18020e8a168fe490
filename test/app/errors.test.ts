// Every failure is the spec's Error with the rate-limit headers: unknown paths, wrong methods,
// crashes (no internals shown); request ids; the published spec and docs; rate limiting; and what
// Node and Fastify write themselves (parser refusals, malformed URLs, __proto__ keys, errors of
// other libraries).
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildApp } from '../../app.js'
import { createConfig } from '../../config.js'
import { call, spec, storageConfig, testApp, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { type Conversation, exchange, open } from '../helpers/socket.js'

const PROJECTS = '/project_metadata.json'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

t.test('unknown path: 404 not_found, as an Error with the rate-limit headers', async (t) => {
  const { app } = await testApp(t)
  for (const url of ['/nope', '/api/v1/projects', '/project_metadata.json/extra', '/leads.json/', '/nope?x=1']) {
    for (const method of ['GET', 'POST', 'DELETE'] as const) {
      const res = await call(t, app, { method, url })
      t.equal(res.statusCode, 404, `${method} ${url}: 404`)
      t.equal(res.json().code, 'not_found')
      t.match(res.json().hint, /openapi\.json|docs/)
      t.notOk(res.headers.allow, 'no Allow on a 404')
    }
  }
  const q = await app.inject({ url: '/nope?secret=1' })
  t.notMatch(q.json().message, /secret/, 'the query string is not echoed')
})

t.test('wrong method on a known path: 405 method_not_allowed with Allow', async (t) => {
  const { app } = await testApp(t)
  const cases: [string, string, string][] = [
    ['DELETE', PROJECTS, 'GET, HEAD'],
    ['POST', PROJECTS, 'GET, HEAD'],
    ['PUT', '/leads.json', 'GET, HEAD'],
    ['GET', '/api/token', 'POST'],
    ['GET', '/scripts/enquiry_backend.php', 'POST'],
    ['PATCH', '/.well-known/jwks.json', 'GET, HEAD'],
  ]
  for (const [method, url, allow] of cases) {
    const res = await call(t, app, { method: method as 'GET', url })
    t.equal(res.statusCode, 405, `${method} ${url}: 405`)
    t.equal(res.json().code, 'method_not_allowed')
    t.equal(res.headers.allow, allow, `${method} ${url}: Allow`)
    t.match(res.json().hint, new RegExp(allow.split(', ')[0] as string))
  }
})

async function appWithCrash(t: Parameters<typeof testApp>[0]): Promise<FastifyInstance> {
  const config = createConfig({ dataDir: testdir(t, {}), logLevel: 'silent', ...(await storageConfig(t)) })
  const app = await buildApp(config)
  t.teardown(() => app.close())
  app.get('/boom', async () => {
    throw new Error(
      `SQLITE_ERROR: near "FROM": syntax error in SELECT secret_hash FROM clients WHERE id = 'x' at /srv/studio/plugins/store/clients.ts:42`,
    )
  })
  app.get('/boom-sync', () => {
    const e = new Error('ENOENT: no such file or directory, open /etc/studio/keys/private.pem') as Error & { statusCode: number }
    e.statusCode = 500
    throw e
  })
  await app.ready()
  return app
}

t.test('a crash: 500 internal_error, never the message, a SQL string, a path or a stack', async (t) => {
  const app = await appWithCrash(t)
  for (const url of ['/boom', '/boom-sync']) {
    const res = await call(t, app, { url })
    t.equal(res.statusCode, 500)
    const body = res.json()
    t.equal(body.code, 'internal_error')
    t.same(Object.keys(body).sort(), body.hint === undefined ? ['code', 'message'] : ['code', 'hint', 'message'])
    for (const leak of ['SQLITE', 'SELECT', 'secret_hash', '/srv/', '.ts', 'ENOENT', '/etc/', 'private.pem', 'at ', 'stack', 'Error:']) {
      t.notOk(res.body.includes(leak), `${url}: the body does not contain ${JSON.stringify(leak)}`)
    }
    t.match(res.headers['x-request-id'], UUID)
  }
})

t.test('X-Request-Id: on every response; a sane one is echoed, an insane one replaced', async (t) => {
  const { app } = await testApp(t)
  const seen = new Set<string>()
  for (const opts of [
    { url: '/nope' },
    { url: PROJECTS },
    { url: '/openapi.json' },
    { method: 'DELETE' as const, url: PROJECTS },
    { url: '/.well-known/jwks.json' },
  ]) {
    const res = await call(t, app, opts)
    t.match(res.headers['x-request-id'], UUID, `${opts.url}: a generated id`)
    seen.add(res.headers['x-request-id'] as string)
  }
  t.equal(seen.size, 5, 'each request its own id')

  for (const sane of ['trace-123', 'a1b2c3d4.e5:f6_g7', 'x'.repeat(128), '2d6a3b1e-7c1a-4a8e-9d7b-3f0c1e2d4b5a']) {
    const res = await call(t, app, { url: '/nope', headers: { 'x-request-id': sane } })
    t.equal(res.headers['x-request-id'], sane, `${sane.slice(0, 20)}: echoed`)
  }
  for (const insane of ['x'.repeat(129), 'has space', 'semi;colon', '<script>', 'new\\nline', '', 'ünïcode']) {
    const res = await call(t, app, { url: '/nope', headers: { 'x-request-id': insane } })
    t.not(res.headers['x-request-id'], insane, `${JSON.stringify(insane.slice(0, 20))}: not echoed`)
    t.match(res.headers['x-request-id'], UUID, `${JSON.stringify(insane.slice(0, 20))}: replaced by a generated id`)
  }
})

t.test('/openapi.json serves the spec, with servers = the public base URL', async (t) => {
  const publicBaseUrl = 'https://api.studio.example'
  const { app } = await testApp(t, { publicBaseUrl })
  const res = await call(t, app, { url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')
  t.equal(doc.info.version, '1.3.0', 'the contract is 1.3.0 (the one place a test names the version)')
  t.equal(doc.info.version, spec.version)
  t.equal(doc.servers.length, 1)
  t.equal(doc.servers[0].url, publicBaseUrl, "this deployment's URL")
  t.equal(doc.servers[0]['x-internal'], false, 'with the audience and environment the spec gives it (OWASP API9)')
  t.match(
    doc.servers[0].description,
    /The Studio API in production. Every path below is relative to it/,
    "the spec's description, for API consumers",
  )
  t.equal(doc.components.securitySchemes.OAuth2.flows.clientCredentials.tokenUrl, `${publicBaseUrl}/api/token`)
  t.same(Object.keys(doc.paths).sort(), Object.keys(spec.document.paths).sort(), 'every path of the spec')
  t.equal(res.headers['x-api-version'], spec.version)
})

t.test('/docs: Swagger UI, with every asset served locally', async (t) => {
  const { app, config } = await testApp(t)
  for (const page of ['/docs', '/docs/']) {
    const res = await call(t, app, { url: page })
    t.equal(res.statusCode, 200, `${page}: 200`)
    t.match(res.headers['content-type'], /^text\/html/)
    t.match(res.body, /swagger-ui/i)
    const refs = [...res.body.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1] as string)
    t.ok(
      refs.some((r) => /swagger-ui-bundle\.js$/.test(r)),
      `${page}: loads the Swagger UI bundle`,
    )
    t.ok(
      refs.some((r) => /\.css$/.test(r)),
      `${page}: loads a stylesheet`,
    )
    t.notMatch(res.body, /<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?\/\//i, `${page}: no external script or link`)
    for (const ref of refs) {
      const path = new URL(ref, `http://local${page}`).pathname
      const asset = await app.inject({ url: path })
      t.equal(asset.statusCode, 200, `${page}: ${path} is served`)
      if (path.endsWith('.js')) t.notMatch(asset.body.slice(0, 4000), /<html/i, `${path} is the script, not a page`)
    }
  }
  // The initializer points Swagger UI at our own spec.
  const init = await app.inject({ url: '/docs/static/swagger-initializer.js' })
  t.equal(init.statusCode, 200)
  t.match(init.body, /url: resolveUrl\('\.\/json'\)/, 'the initializer loads the spec from ./json')
  t.notMatch(init.body, /url:\s*['"]https?:/, 'and from no external URL')
  const json = await call(t, app, { url: '/docs/json' })
  t.equal(json.statusCode, 200)
  t.equal(json.json().info.version, spec.version)
  t.equal(json.json().servers[0].url, config.publicBaseUrl, 'the served spec, as /openapi.json serves it')
})

t.test('rate limiting: 429 rate_limited with Retry-After, per client', async (t) => {
  const { app } = await testApp(t, { rateLimits: { getProjects: { max: 2 } } })
  const a = await tokenFor(app, ['read:projects'])
  const b = await tokenFor(app, ['read:projects'])
  const as = { authorization: `Bearer ${a.token}` }

  const first = await call(t, app, { url: PROJECTS, headers: as })
  t.equal(first.statusCode, 200)
  t.equal(first.headers['x-ratelimit-limit'], '2')
  t.equal(first.headers['x-ratelimit-remaining'], '1')
  const second = await call(t, app, { url: PROJECTS, headers: as })
  t.equal(second.statusCode, 200)
  t.equal(second.headers['x-ratelimit-remaining'], '0')
  const third = await call(t, app, { url: PROJECTS, headers: as })
  t.equal(third.statusCode, 429)
  t.equal(third.json().code, 'rate_limited')
  t.match(third.json().hint, /retry after \d+ seconds/)
  t.match(third.headers['retry-after'], /^\d+$/)
  t.ok(Number(third.headers['retry-after']) >= 1 && Number(third.headers['retry-after']) <= 60, 'Retry-After within the window')
  t.equal(third.headers['x-ratelimit-limit'], '2')
  t.equal(third.headers['x-ratelimit-remaining'], '0')
  t.ok(Number(third.headers['x-ratelimit-reset']) <= 60)
  t.notOk(third.headers.etag, 'no catalogue on a 429')

  // Another client has its own budget.
  const other = await call(t, app, { url: PROJECTS, headers: { authorization: `Bearer ${b.token}` } })
  t.equal(other.statusCode, 200)
  t.equal(other.headers['x-ratelimit-remaining'], '1')
  // Other operations keep their own budgets too.
  const jwks = await call(t, app, { url: '/.well-known/jwks.json', headers: as })
  t.equal(jwks.statusCode, 200)
  // A forged token does not spend a's budget (and is not refused as a's 429).
  const forged = await call(t, app, {
    url: PROJECTS,
    headers: { authorization: `Bearer ${a.token.slice(0, -4)}AAAA` },
    remoteAddress: '192.0.2.77',
  })
  t.equal(forged.statusCode, 401, 'a forged token is keyed by address, not by the client it names')
})

t.test('rate limiting: unauthenticated requests are keyed by address', async (t) => {
  const { app } = await testApp(t, { rateLimits: { getProjects: { max: 2 } } })
  const from = (remoteAddress: string, headers: Record<string, string> = {}) => call(t, app, { url: PROJECTS, remoteAddress, headers })
  t.equal((await from('192.0.2.1')).statusCode, 401)
  t.equal((await from('192.0.2.1')).statusCode, 401)
  const over = await from('192.0.2.1')
  t.equal(over.statusCode, 429, 'the address budget is spent')
  t.equal(over.json().code, 'rate_limited')
  t.match(over.headers['retry-after'], /^\d+$/)
  const elsewhere = await from('192.0.2.2')
  t.equal(elsewhere.statusCode, 401, 'another address has its own budget')
  t.equal(elsewhere.headers['x-ratelimit-remaining'], '1')
  // A client calling from the spent address still has its own budget.
  const { token } = await tokenFor(app, ['read:projects'])
  const authed = await from('192.0.2.1', { authorization: `Bearer ${token}` })
  t.equal(authed.statusCode, 200)
})

/** The API's security headers (plugins/headers), which README promises on every response. */
function apiSecurityHeaders(t: Parameters<typeof testApp>[0], headers: Record<string, string | string[] | undefined>, label: string): void {
  t.equal(headers['x-content-type-options'], 'nosniff', `${label}: nosniff`)
  t.equal(headers['x-frame-options'], 'DENY', `${label}: X-Frame-Options`)
  t.equal(headers['referrer-policy'], 'no-referrer', `${label}: Referrer-Policy`)
  t.equal(headers['cross-origin-resource-policy'], 'same-origin', `${label}: Cross-Origin-Resource-Policy`)
}

/** A listening app, for requests only a socket can send. */
async function listening(t: Parameters<typeof testApp>[0]): Promise<{ app: FastifyInstance; port: number }> {
  const { app } = await testApp(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, port: (app.server.address() as { port: number }).port }
}

t.test('what the HTTP parser refuses is answered in the Error shape too, and the connection closed', async (t) => {
  const { port } = await listening(t)
  const get = (line: string, headers = 'Host: x\r\n') => `${line}\r\n${headers}\r\n`
  const cases: [string, string, number, string, RegExp][] = [
    [
      'headers over 16 KiB',
      get('GET /project_metadata.json HTTP/1.1', `Host: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n`),
      431,
      'headers_too_large',
      /16 KiB/,
    ],
    ['a URL over 16 KiB', get(`GET /${'a'.repeat(20_000)} HTTP/1.1`), 431, 'headers_too_large', /16 KiB/],
    [
      'Content-Length and Transfer-Encoding together',
      'POST /api/token HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      'invalid_request',
      /Content-Length and Transfer-Encoding/,
    ],
    [
      'two Content-Lengths',
      'POST /api/token HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab',
      400,
      'invalid_request',
      /Content-Length/,
    ],
    ['an unreadable request line', 'GARBAGE\r\n\r\n', 400, 'invalid_request', /./],
    ['a request target without a slash', get('GET nope HTTP/1.1'), 400, 'invalid_request', /HTTP\/1\.1/],
    ['a control character in a header', get('GET / HTTP/1.1', 'Host: x\r\nX-A: a\u0001b\r\n'), 400, 'invalid_request', /header/],
    ['an unknown method', get('FOO / HTTP/1.1'), 400, 'invalid_request', /method/],
    ['HTTP/3.0', get('GET / HTTP/3.0'), 505, 'http_version_not_supported', /HTTP\/1\.1/],
    ['HTTP/1.2', get('GET / HTTP/1.2'), 505, 'http_version_not_supported', /HTTP\/1\.1/],
    ['HTTP/0.1', get('GET / HTTP/0.1'), 505, 'http_version_not_supported', /HTTP\/1\.1/],
    ['HTTP/2.1', get('GET / HTTP/2.1'), 505, 'http_version_not_supported', /HTTP\/1\.1/],
    ['HTTP/1 (no minor version)', get('GET / HTTP/1'), 505, 'http_version_not_supported', /HTTP\/1\.1/],
    ['the HTTP/2 connection preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 505, 'http_version_not_supported', /HTTP\/2/],
    ['a bare LF after the request line', 'GET / HTTP/1.1\nHost: x\n\n', 400, 'invalid_request', /CRLF/],
    ['a bare LF after an HTTP/1.0 request line', 'GET / HTTP/1.0\n\n', 400, 'invalid_request', /CRLF/],
    ['a bare LF after a header', 'GET / HTTP/1.1\r\nHost: x\n\r\n', 400, 'invalid_request', /CRLF/],
    ['a bare LF ending the headers', 'GET / HTTP/1.1\r\nHost: x\r\n\n', 400, 'invalid_request', /CRLF/],
    ['a bare LF after a request line without a version', 'GET /\n\n', 400, 'invalid_request', /CRLF/],
    ['a bare CR after the request line', 'GET / HTTP/1.1\rHost: x\r\n\r\n', 400, 'invalid_request', /CRLF/],
    ['a space after the version', get('GET / HTTP/1.1 '), 400, 'invalid_request', /request line/],
    [
      'chunk extensions over the limit',
      `POST /scripts/enquiry_backend.php HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n1;${'a'.repeat(20_000)}\r\na\r\n0\r\n\r\n`,
      413,
      'payload_too_large',
      /chunk extensions/,
    ],
    ['CONNECT (this is no proxy)', 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 405, 'method_not_allowed', /proxy/],
  ]
  for (const [label, request, status, code, hint] of cases) {
    const res = await exchange(port, request)
    t.equal(res?.status, status, `${label}: ${status}`)
    let body: Record<string, string> = {}
    try {
      body = JSON.parse(res?.body ?? '')
    } catch {
      t.fail(`${label}: the body is JSON: ${res?.raw.slice(0, 200)}`)
    }
    t.equal(body.code, code, `${label}: code`)
    t.match(`${body.message} ${body.hint}`, hint, `${label}: says what is wrong`)
    t.type(body.hint, 'string', `${label}: a hint`)
    t.match(res?.headers['content-type'], /^application\/json/, `${label}: JSON`)
    t.equal(res?.headers['x-api-version'], spec.version, `${label}: X-API-Version`)
    t.match(res?.headers['x-request-id'], UUID, `${label}: X-Request-Id`)
    t.equal(res?.headers.connection, 'close', `${label}: the connection is closed`)
    apiSecurityHeaders(t, res?.headers ?? {}, label)
    // The path may be the token endpoint's, which the parser cannot know: the RFC 6749 fields too.
    t.type(body.error, 'string', `${label}: RFC 6749 error`)
    t.match(body.error_description, /^[\x20\x21\x23-\x5B\x5D-\x7E]+$/, `${label}: RFC 6749 error_description`)
  }
})

t.test('Node and Fastify answers after parsing are the Error shape too: Host, Expect, malformed URLs, long ids', async (t) => {
  const { port } = await listening(t)
  const cases: [string, string, number, string][] = [
    ['HTTP/1.1 without Host', 'GET /.well-known/jwks.json HTTP/1.1\r\n\r\n', 400, 'invalid_request'],
    ['a malformed percent-encoding', 'GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
    ['a path segment over the router limit', `GET /projects/${'a'.repeat(200)} HTTP/1.1\r\nHost: x\r\n\r\n`, 404, 'not_found'],
    ['an Expect this server does not meet', 'GET /nope HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n', 404, 'not_found'],
  ]
  for (const [label, request, status, code] of cases) {
    const res = await exchange(port, request)
    t.equal(res?.status, status, `${label}: ${status}`)
    t.equal(JSON.parse(res?.body || '{}').code, code, `${label}: code ${code}`)
    t.equal(res?.headers['x-api-version'], spec.version, `${label}: X-API-Version`)
    t.match(res?.headers['x-ratelimit-limit'], /^\d+$/, `${label}: rate-limit headers`)
    apiSecurityHeaders(t, res?.headers ?? {}, label)
  }
  const missingHost = JSON.parse((await exchange(port, 'GET / HTTP/1.1\r\n\r\n'))?.body ?? '{}')
  t.match(missingHost.message, /Host/, 'the missing Host is named')
  const http10 = await exchange(port, 'GET /nope HTTP/1.0\r\n\r\n')
  t.equal(http10?.status, 404, 'HTTP/1.0 needs no Host')
})

t.test(
  'HTTP versions the parser lets through but the server does not speak (0.9, 2.0): 505, as every version but 1.0 and 1.1',
  async (t) => {
    const { port } = await listening(t)
    const cases: [string, string][] = [
      ['HTTP/2.0', 'GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n'],
      ['HTTP/2.0 to an operation', 'GET /project_metadata.json HTTP/2.0\r\nHost: x\r\n\r\n'],
      ['HTTP/0.9', 'GET /healthz HTTP/0.9\r\nHost: x\r\n\r\n'],
      ['a request line without a version (HTTP/0.9)', 'GET /healthz\r\n\r\n'],
      ['HTTP/2.0 with a body', 'POST /api/token HTTP/2.0\r\nHost: x\r\nContent-Length: 29\r\n\r\ngrant_type=client_credentials'],
    ]
    for (const [label, request] of cases) {
      const res = await exchange(port, request)
      t.equal(res?.status, 505, `${label}: 505`)
      t.equal(JSON.parse(res?.body || '{}').code, 'http_version_not_supported', `${label}: http_version_not_supported`)
      t.match(JSON.parse(res?.body || '{}').hint, /HTTP\/1\.1/, `${label}: says which version to send`)
      t.equal(res?.headers.connection, 'close', `${label}: the connection is closed`)
      t.equal(res?.headers['x-api-version'], spec.version, `${label}: X-API-Version`)
      apiSecurityHeaders(t, res?.headers ?? {}, label)
    }
    for (const version of ['1.0', '1.1']) {
      const res = await exchange(port, `GET /healthz HTTP/${version}\r\nHost: x\r\nConnection: close\r\n\r\n`)
      t.equal(res?.status, 200, `HTTP/${version} is served`)
    }
  },
)

/** What a connection has received once it matches `pattern` (or after 5 s). */
async function until(c: Conversation, pattern: RegExp): Promise<string> {
  const deadline = Date.now() + 5000
  while (!pattern.test(c.received()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  return c.received()
}

t.test('Expect: 100-continue gets 100 Continue only once the request has passed the security gate', async (t) => {
  const { app, port } = await listening(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const body = JSON.stringify({ name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0000' })
  const head = (headers: string) =>
    `POST /scripts/enquiry_backend.php HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n${headers}\r\n`
  const refusals: [string, string, number][] = [
    ['no credentials', '', 401],
    ['a forged token', 'Authorization: Bearer not.a.token\r\n', 401],
    ['a token without the scope', `Authorization: Bearer ${(await tokenFor(app, ['read:leads'])).token}\r\n`, 403],
  ]
  for (const [label, headers, status] of refusals) {
    const c = await open(port)
    c.socket.write(head(headers))
    const res = await c.response(5000)
    t.equal(res?.status, status, `${label}: ${status} at once, without the body`)
    t.notMatch(c.received(), /100 Continue/, `${label}: no 100 Continue`)
    t.ok(await c.closed(5000), `${label}: the connection is closed rather than the body read`)
  }
  const wrongType = await open(port)
  wrongType.socket.write(head(`Authorization: Bearer ${token}\r\n`).replace('application/json', 'text/plain'))
  t.equal((await wrongType.response(5000))?.status, 415, 'a body in the wrong content type: 415')
  t.notMatch(wrongType.received(), /100 Continue/, 'without 100 Continue')
  wrongType.socket.destroy()

  const c = await open(port)
  c.socket.write(head(`Authorization: Bearer ${token}\r\n`))
  t.match(await until(c, /\r\n\r\n/), /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'a request that passes the gate is invited to send its body')
  c.socket.write(body)
  t.match(await until(c, /HTTP\/1\.1 200 OK/), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/, 'then stored: 200')
  c.socket.destroy()

  // The token endpoint authenticates the client from the body too (client_secret_post): it gets 100 Continue.
  const tokenRequest = 'grant_type=client_credentials'
  const te = await open(port)
  te.socket.write(
    `POST /api/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${tokenRequest.length}\r\nExpect: 100-continue\r\n\r\n`,
  )
  t.match(
    await until(te, /\r\n\r\n/),
    /^HTTP\/1\.1 100 Continue\r\n/,
    'the token endpoint, which needs the body to authenticate, asks for it',
  )
  te.socket.write(tokenRequest)
  t.match(await until(te, /HTTP\/1\.1 4\d\d /), /HTTP\/1\.1 401 Unauthorized/, 'and answers it (no client credentials: 401)')
  te.socket.destroy()
})

t.test('a body with a __proto__ key: 400 saying the key is refused, not "not valid JSON"', async (t) => {
  const { app } = await testApp(t, { leadsAllowAnonymous: true })
  const send = (payload: string) =>
    call(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: { 'content-type': 'application/json' }, payload })
  for (const payload of [
    '{"__proto__":{"admin":true},"name":"A","email":"a@example.com","phone":"+44 20 7946 0000"}',
    '{"name":"A","email":"a@example.com","phone":"+44 20 7946 0000","x":{"__proto__":{"admin":true}}}',
    '{"constructor":{"prototype":{"admin":true}},"name":"A","email":"a@example.com","phone":"+44 20 7946 0000"}',
    '{"\\u005f_proto__":{"admin":true},"name":"A"}',
  ]) {
    const res = await send(payload)
    t.equal(res.statusCode, 400, `${payload.slice(0, 30)}: 400`)
    t.equal(res.json().code, 'invalid_request')
    t.match(res.json().message, /__proto__/, 'names the refused key')
    t.notMatch(res.json().message, /not valid JSON/, 'does not call valid JSON invalid')
  }
  const syntax = await send('{"name": "A",}')
  t.match(syntax.json().message, /not valid JSON/, 'a real syntax error is still called one')
  const empty = await send('')
  t.equal(empty.statusCode, 400)
})

t.test('a JSON body that is not UTF-8: 400 naming the byte, and nothing stored; UTF-8 is stored as sent', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const lead = (name: string) => `{"name":"${name}","email":"r@example.com","phone":"+44 20 7946 0000"}`
  const send = (payload: Buffer, contentType = 'application/json') =>
    call(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: { ...auth, 'content-type': contentType }, payload })
  // A lead for "Ren?e" with the given bytes for its ?, at byte `at` of the body.
  const head = Buffer.from('{"name":"Ren')
  const tail = Buffer.from(lead('e').slice('{"name":"'.length))
  const at = head.length
  const bytes = (...raw: number[]) => Buffer.concat([head, Buffer.from(raw), tail])
  t.equal((await send(bytes(0xc3, 0xa9))).statusCode, 200, 'the same lead with é in UTF-8 (0xc3 0xa9): 200')
  for (const [label, payload, bad] of [
    ['Latin-1 é (0xe9)', bytes(0xe9, 0x65), 0xe9],
    ['Windows-1252 quote (0x93)', bytes(0x93, 0x65), 0x93],
    ['an overlong slash (0xc0 0xaf)', bytes(0xc0, 0xaf), 0xc0],
    ['a UTF-16 surrogate in UTF-8 (0xed 0xa0 0x80)', bytes(0xed, 0xa0, 0x80), 0xed],
    ['a character cut short (0xe2 0x82)', bytes(0xe2, 0x82), 0xe2],
    ['a stray continuation byte (0x80)', bytes(0x80), 0x80],
  ] as const) {
    const res = await send(payload)
    t.equal(res.statusCode, 400, `${label}: 400`)
    t.equal(res.json().code, 'invalid_request', `${label}: invalid_request`)
    t.equal(
      res.json().message,
      `The request body is not valid UTF-8: byte ${at} (0x${bad.toString(16)}) begins no UTF-8 character.`,
      `${label}: names the byte`,
    )
    t.match(res.json().hint, /UTF-8/, `${label}: the hint says to send UTF-8`)
  }
  const declared = await send(bytes(0xe9, 0x65), 'application/json; charset=ISO-8859-1')
  t.equal(declared.statusCode, 400, 'a declared Latin-1 charset changes nothing: 400')
  t.match(declared.json().hint, /charset=ISO-8859-1/, 'and the hint names the charset the client declared')
  const log = await call(t, app, { url: '/leads.json', headers: auth })
  t.same(
    log.json().map((l: { name: string }) => l.name),
    ['Renée'],
    'none of them was stored (only the UTF-8 one)',
  )

  // UTF-8 itself, of every length, with a byte order mark or without, is stored as sent.
  const names = ['Renée', 'Zoë Ødegård', 'Mónica 漢字', 'Ana 👩\u200d🎨']
  for (const name of names) t.equal((await send(Buffer.from(lead(name)))).statusCode, 200, `${name}: 200`)
  t.equal((await send(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lead('Bom'))]))).statusCode, 200, 'a BOM: 200')
  const stored = (await call(t, app, { url: '/leads.json', headers: auth })).json().map((l: { name: string }) => l.name)
  t.same(stored, ['Renée', ...names, 'Bom'], 'stored as sent')
})

t.test('a lone surrogate escaped in a JSON body: 400 naming the field; a pair, or the text of an escape, is stored as sent', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const send = (payload: string) =>
    call(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: { ...auth, 'content-type': 'application/json' }, payload })
  const phone = '"phone":"+44 20 7946 0000"'
  for (const [label, payload, field] of [
    ['a lone high surrogate', `{"name":"Lone \\ud800 high","email":"s@example.com",${phone}}`, 'name'],
    ['a lone low surrogate, upper case', `{"name":"Lone \\uDC00 low","email":"s@example.com",${phone}}`, 'name'],
    ['a pair the wrong way round', `{"name":"Swapped \\udfdb\\ud83c","email":"s@example.com",${phone}}`, 'name'],
    ['one in the note', `{"name":"Note","email":"s@example.com",${phone},"note":"ok \\ud83c"}`, 'note'],
    ['one in a key', `{"name":"Key","email":"s@example.com",${phone},"\\ud800":1}`, '\ud800'],
  ] as const) {
    const res = await send(payload)
    t.equal(res.statusCode, 400, `${label}: 400`)
    t.equal(res.json().code, 'invalid_request', `${label}: invalid_request`)
    t.ok(res.json().message.includes(`\`${field}\` holds a lone surrogate`), `${label}: names the field (${res.json().message})`)
    t.match(res.json().hint, /surrogate pair/, `${label}: the hint says how to write such a character`)
  }
  t.same((await call(t, app, { url: '/leads.json', headers: auth })).json(), [], 'none of them was stored')

  const pair = await send(`{"name":"Pair \\ud83c\\udfdb","email":"s@example.com",${phone}}`)
  t.equal(pair.statusCode, 200, 'an escaped surrogate pair: 200')
  const text = await send(`{"name":"Path C:\\\\ud800","email":"s@example.com",${phone}}`)
  t.equal(text.statusCode, 200, 'a backslash followed by "ud800" (text, no escape): 200')
  const names = (await call(t, app, { url: '/leads.json', headers: auth })).json().map((l: { name: string }) => l.name)
  t.same(names, ['Pair 🏛', 'Path C:\\ud800'], 'stored as sent')
})

t.test('errors other libraries raise with a status only keep a status of their own', async (t) => {
  const { app } = await testApp(t)
  const image = '/images/aoyama-concept-store-tokyo.svg'
  const cases: [string, Record<string, string>, number, string][] = [
    ['If-Match that does not match', { 'if-match': '"nope"' }, 412, 'precondition_failed'],
    ['If-Unmodified-Since in the past', { 'if-unmodified-since': 'Mon, 01 Jan 2001 00:00:00 GMT' }, 412, 'precondition_failed'],
  ]
  for (const [label, headers, status, code] of cases) {
    const res = await call(t, app, { url: image, headers })
    t.equal(res.statusCode, status, `${label}: ${status}, not a 500`)
    t.equal(res.json().code, code)
  }
  const range = await call(t, app, { url: image, headers: { range: 'bytes=999999-' } })
  t.equal(range.statusCode, 200, 'byte ranges of images are ignored (whole file), never a 500')
  const outside = await call(t, app, { url: '/images/%2e%2e/%2e%2e/package.json' })
  t.equal(outside.statusCode, 404, 'a path out of the images folder is simply not found')
  t.equal(outside.json().code, 'not_found', 'not insufficient_scope')
})

t.test('a compressed body is refused with 415, not misread', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const res = await call(t, app, {
    method: 'POST',
    url: '/scripts/enquiry_backend.php',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
    payload: '{}',
  })
  t.equal(res.statusCode, 415)
  t.equal(res.json().code, 'unsupported_media_type')
  t.match(res.json().hint, /uncompressed/)
})
