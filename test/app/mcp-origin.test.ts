// Streamable HTTP's Origin rule on /mcp: a request from a browser origin that is not allowed is
// refused with 403 in the JSON-RPC error form MCP clients read (and the API's Error shape); the
// server's own origin and the ones in CORS_ORIGINS pass; clients that send no Origin pass.
import t from 'tap'
import { allowedOrigins, originAllowed } from '../../features/mcp/origin.js'
import { call, testApp } from '../helpers/app.js'

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
}
const post = (origin?: string) => ({
  method: 'POST' as const,
  url: '/mcp',
  headers: {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...(origin !== undefined && { origin }),
  },
  payload: initialize,
})

t.test('the rule: the server’s own origin and CORS_ORIGINS, compared as browsers serialize origins', async (t) => {
  const allowed = allowedOrigins({
    publicBaseUrl: 'https://api.studio.example',
    corsOrigins: ['https://studio.example', 'http://localhost:5173'],
  })
  t.same([...allowed].sort(), ['http://localhost:5173', 'https://api.studio.example', 'https://studio.example'])
  t.ok(originAllowed(undefined, allowed), 'no Origin: not a browser')
  t.ok(originAllowed('https://studio.example', allowed))
  t.ok(originAllowed('https://STUDIO.example:443', allowed), 'default port and case do not matter')
  t.ok(originAllowed('http://localhost:5173', allowed))
  for (const origin of [
    'https://evil.example',
    'http://studio.example',
    'https://studio.example.evil.example',
    'http://localhost:5174',
    'null',
    '',
  ]) {
    t.notOk(originAllowed(origin, allowed), `${JSON.stringify(origin)} is refused`)
  }
})

t.test('Origin: https://evil.example is refused with 403 in the JSON-RPC error form', async (t) => {
  const { app } = await testApp(t)
  for (const origin of ['https://evil.example', 'null']) {
    const res = await call(t, app, post(origin))
    t.equal(res.statusCode, 403, `${origin}: 403`)
    const body = res.json()
    t.match(
      body,
      { jsonrpc: '2.0', id: null, error: { code: -32000, message: /may not call this MCP endpoint/ } },
      `${origin}: JSON-RPC error`,
    )
    t.equal(body.code, 'origin_not_allowed', `${origin}: and the API's Error code`)
    t.match(body.hint, /CORS_ORIGINS/)
    t.equal(res.headers['access-control-allow-origin'], undefined, 'no CORS grant either')
  }
})

t.test('the server’s own origin, a listed origin and no Origin at all pass', async (t) => {
  const { app, config } = await testApp(t, { corsOrigins: ['https://studio.example'] })
  const own = new URL(config.publicBaseUrl).origin
  for (const origin of [own, 'https://studio.example', undefined]) {
    const res = await app.inject(post(origin))
    t.equal(res.statusCode, 200, `${origin ?? 'no Origin'}: served`)
    t.match(res.body, /"protocolVersion":"2025-06-18"/)
  }
  const listed = await app.inject(post('https://studio.example'))
  t.equal(listed.headers['access-control-allow-origin'], 'https://studio.example', 'a listed origin can read the answer')
  t.match(listed.headers['access-control-expose-headers'], /WWW-Authenticate/, 'and the challenges')
  t.equal((await app.inject(post('https://elsewhere.example'))).statusCode, 403, 'an unlisted one cannot')

  // A browser-based MCP client on a listed origin: its preflight allows the MCP headers.
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/mcp',
    headers: {
      origin: 'https://studio.example',
      'access-control-request-method': 'POST',
      'access-control-request-headers': 'content-type, mcp-protocol-version, authorization',
    },
  })
  t.equal(preflight.statusCode, 204)
  t.match(String(preflight.headers['access-control-allow-headers']).toLowerCase(), /mcp-protocol-version/)
})
