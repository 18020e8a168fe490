// Request framing a proxy may read otherwise than this server (third audit, finding 8; RFC 9112
// §3.2, §6.1, §6.3): two Host headers, `Transfer-Encoding: gzip, chunked`, two Transfer-Encoding
// fields, and their siblings are refused with 400, the Error body and the connection closed, over
// a raw socket (what fetch cannot send); nothing is stored. Framing that is merely unusual but
// unambiguous (a coding name's case, a Host with a port) is served.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { leadOf, spec, testApp, tokenFor } from '../helpers/app.js'
import { exchange } from '../helpers/socket.js'

const body = JSON.stringify(leadOf(1))
const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`

async function listening(t: Parameters<typeof testApp>[0]): Promise<{ app: FastifyInstance; port: number; auth: string }> {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, port: (app.server.address() as { port: number }).port, auth: `Authorization: Bearer ${token}\r\n` }
}

t.test('ambiguous framing and Host: 400, the Error body, the connection closed, nothing stored', async (t) => {
  const { app, port, auth } = await listening(t)
  const post = (headers: string, rest: string, version = '1.1') =>
    `POST /scripts/enquiry_backend.php HTTP/${version}\r\n${auth}Content-Type: application/json\r\n${headers}\r\n${rest}`
  const cl = `Content-Length: ${body.length}\r\n`
  const cases: [string, string, RegExp][] = [
    ['two Host headers', post(`Host: a\r\nHost: b\r\n${cl}`, body), /more than one Host/],
    ['two equal Host headers', post(`Host: a\r\nHost: a\r\n${cl}`, body), /more than one Host/],
    ['two Host headers on a GET', 'GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', /more than one Host/],
    ['an empty Host', post(`Host: \r\n${cl}`, body), /Host header is not a host/],
    ['a Host list', post(`Host: a, b\r\n${cl}`, body), /Host header is not a host/],
    ['a Host with a path', post(`Host: a/b\r\n${cl}`, body), /Host header is not a host/],
    ['a Host with userinfo', post(`Host: user@a\r\n${cl}`, body), /Host header is not a host/],
    ['Transfer-Encoding: gzip, chunked', post('Host: a\r\nTransfer-Encoding: gzip, chunked\r\n', chunked), /not chunked alone/],
    ['Transfer-Encoding: identity, chunked', post('Host: a\r\nTransfer-Encoding: identity, chunked\r\n', chunked), /not chunked alone/],
    [
      'two Transfer-Encoding fields (identity, chunked)',
      post('Host: a\r\nTransfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n', chunked),
      /not chunked alone/,
    ],
    [
      'two Transfer-Encoding fields (gzip, chunked)',
      post('Host: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n', chunked),
      /not chunked alone/,
    ],
    [
      'Transfer-Encoding in HTTP/1.0',
      post('Host: a\r\nTransfer-Encoding: chunked\r\n', chunked, '1.0'),
      /HTTP\/1\.0 request cannot carry Transfer-Encoding/,
    ],
    [
      'Transfer_Encoding beside Content-Length',
      post(`Host: a\r\nTransfer_Encoding: chunked\r\n${cl}`, body),
      /Transfer_Encoding.*transfer-encoding/,
    ],
    [
      'Content_Length beside Transfer-Encoding',
      post('Host: a\r\nContent_Length: 5\r\nTransfer-Encoding: chunked\r\n', chunked),
      /Content_Length/,
    ],
    // What llhttp refuses (plugins/errors/raw.ts), listed here as the siblings they are.
    ['Content-Length with Transfer-Encoding', post(`Host: a\r\n${cl}Transfer-Encoding: chunked\r\n`, chunked), /ambiguous/],
    ['two equal Content-Lengths', post(`Host: a\r\n${cl}${cl}`, body), /ambiguous/],
    ['two different Content-Lengths', post(`Host: a\r\n${cl}Content-Length: ${body.length + 1}\r\n`, `${body} `), /ambiguous/],
    ['a Content-Length list', post(`Host: a\r\nContent-Length: ${body.length}, ${body.length}\r\n`, body), /not valid HTTP/],
    ['a signed Content-Length', post(`Host: a\r\nContent-Length: +${body.length}\r\n`, body), /not valid HTTP/],
    ['obs-fold', post(`Host: a\r\nX-Note: a\r\n b\r\n${cl}`, body), /not valid HTTP/],
    ['a space before the colon', post(`Host: a\r\nContent-Length : ${body.length}\r\n`, body), /not valid HTTP/],
    ['Transfer-Encoding: chunked, chunked', post('Host: a\r\nTransfer-Encoding: chunked, chunked\r\n', chunked), /ambiguous/],
    ['Transfer-Encoding: xchunked', post('Host: a\r\nTransfer-Encoding: xchunked\r\n', chunked), /ambiguous/],
    ['a chunk size in hexadecimal notation', post('Host: a\r\nTransfer-Encoding: chunked\r\n', `0x${chunked}`), /not valid HTTP/],
  ]
  for (const [label, request, message] of cases) {
    const res = await exchange(port, request)
    t.equal(res?.status, 400, `${label}: 400`)
    let error: Record<string, string> = {}
    try {
      error = JSON.parse(res?.body ?? '')
    } catch {
      t.fail(`${label}: the body is JSON: ${res?.raw.slice(0, 200)}`)
    }
    t.equal(error.code, 'invalid_request', `${label}: invalid_request`)
    t.match(error.message, message, `${label}: says what is wrong`)
    t.type(error.hint, 'string', `${label}: a hint`)
    t.equal(res?.headers.connection, 'close', `${label}: the connection is closed`)
    t.equal(res?.headers['x-api-version'], spec.version, `${label}: X-API-Version`)
  }
  t.equal(await app.leads.count(), 0, 'no lead stored')
})

t.test(
  'unambiguous framing is served: a coding name in any case, a Host with a port or an IPv6 literal, HTTP/1.0 without Host',
  async (t) => {
    const { app, port, auth } = await listening(t)
    const post = (headers: string, rest: string, version = '1.1') =>
      `POST /scripts/enquiry_backend.php HTTP/${version}\r\n${auth}Content-Type: application/json\r\nConnection: close\r\n${headers}\r\n${rest}`
    const cases: [string, string][] = [
      ['Transfer-Encoding: Chunked', post('Host: a\r\nTransfer-Encoding: Chunked\r\n', chunked)],
      ['Transfer-Encoding with a tab before it', post('Host: a\r\nTransfer-Encoding:\tchunked\r\n', chunked)],
      ['Host with a port', post(`Host: api.studio.test:8443\r\nContent-Length: ${body.length}\r\n`, body)],
      ['Host an IPv6 literal', post(`Host: [::1]:3000\r\nContent-Length: ${body.length}\r\n`, body)],
      ['HTTP/1.0 without Host', post(`Content-Length: ${body.length}\r\n`, body, '1.0')],
    ]
    for (const [label, request] of cases) {
      const res = await exchange(port, request)
      t.equal(res?.status, 200, `${label}: 200 ${res?.body}`)
    }
    t.equal(await app.leads.count(), cases.length, 'each stored')
  },
)
