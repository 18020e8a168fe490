// What one anonymous request to the staff sign-in's endpoints can make the server send, on a real
// server process (the second audit's amplification rule, applied to what issue 34 added): the
// bytes that arrive on the client's socket for each kind of request, asserted to be a few
// kilobytes; the server's CPU time per request (from /proc/<pid>/stat), reported, not asserted
// (the machine is shared; speed belongs in `npm run bench`). Metadata, keys, the authorization
// endpoint with an unknown client, registration, revocation, both person grants at the token
// endpoint with made-up values, the sign-in and enrolment pages with made-up ids, the passkey
// script, and the 401 that makes Claude sign in.
import { readFileSync } from 'node:fs'
import { connect as tcp } from 'node:net'
import t from 'tap'
import { testdir } from '../helpers/folders.js'
import { type ServerProcess, startServer } from '../helpers/processes.js'

/** "A few kilobytes": what one anonymous request here may make the server send, at most. */
const MAX_ANSWER_BYTES = 16 * 1024
const ANSWER_WITHIN_MS = 20_000

interface Exchange {
  status: number
  bytes: number
}

/** One request on a connection of its own (Connection: close), counting the bytes that arrive. */
function exchange(server: ServerProcess, method: string, path: string, body = '', type = ''): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = tcp(server.port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('error', reject)
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`${method} ${path}: no answer within ${ANSWER_WITHIN_MS} ms`))
    }, ANSWER_WITHIN_MS)
    socket.on('end', () => {
      clearTimeout(timer)
      socket.destroy()
      const all = Buffer.concat(chunks)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(all.subarray(0, 20).toString())?.[1]), bytes: all.length })
    })
    const head = [
      `${method} ${path} HTTP/1.1`,
      `host: 127.0.0.1:${server.port}`,
      'connection: close',
      ...(body ? [`content-type: ${type}`, `content-length: ${Buffer.byteLength(body)}`] : []),
    ]
    socket.write(`${head.join('\r\n')}\r\n\r\n${body}`)
  })
}

/** The server process's CPU time so far (user + system), in milliseconds. */
function cpuMs(server: ServerProcess): number {
  const stat = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

const form = 'application/x-www-form-urlencoded'

t.test('no anonymous request to the staff sign-in makes the server send more than a few KB', async (t) => {
  const server = await startServer(t, {
    DATA_DIR: `${testdir(t, { data: {} })}/data`,
    RATE_LIMITS: 'default=100000, issueToken=100000, mcp=100000',
  })
  const redirect = encodeURIComponent('http://127.0.0.1:9/callback')
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
  const registration = JSON.stringify({
    client_name: 'amplification probe',
    redirect_uris: ['http://127.0.0.1:9/callback'],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  })
  const kinds: [string, string, string, string?, string?][] = [
    ['authorization server metadata', 'GET', '/.well-known/oauth-authorization-server'],
    ['protected resource metadata', 'GET', '/.well-known/oauth-protected-resource'],
    ['protected resource metadata of /mcp', 'GET', '/.well-known/oauth-protected-resource/mcp'],
    ['the JWKS', 'GET', '/.well-known/jwks.json'],
    [
      'authorize, an unknown client',
      'GET',
      `/oauth/authorize?response_type=code&client_id=nobody&redirect_uri=${redirect}&code_challenge=${challenge}&code_challenge_method=S256&scope=read%3Aleads`,
    ],
    ['register (DCR), a public client', 'POST', '/oauth/register', registration, 'application/json'],
    ['register (DCR), a body that is no registration', 'POST', '/oauth/register', '{"redirect_uris": 5}', 'application/json'],
    ['revoke a made-up token', 'POST', '/oauth/revoke', 'token=made-up&client_id=nobody', form],
    [
      'token: a made-up authorization code',
      'POST',
      '/api/token',
      `grant_type=authorization_code&code=made-up&client_id=nobody&redirect_uri=${redirect}&code_verifier=${'v'.repeat(43)}`,
      form,
    ],
    ['token: a made-up refresh token', 'POST', '/api/token', 'grant_type=refresh_token&refresh_token=made-up&client_id=nobody', form],
    ['a sign-in page of a made-up interaction', 'GET', '/oauth/sign-in/made-up'],
    ['an email form posted to a made-up interaction', 'POST', '/oauth/sign-in/made-up/email', 'csrf=x&email=a%40b.example', form],
    ['an enrolment link with a made-up token', 'GET', `/oauth/enrol/${'A'.repeat(43)}`],
    ['the passkey script', 'GET', '/oauth/passkey.js'],
    [
      '/mcp?signin without a token (the 401 Claude reads)',
      'POST',
      '/mcp?signin',
      '{"jsonrpc":"2.0","id":1,"method":"ping"}',
      'application/json',
    ],
  ]
  const REPEAT = 20
  for (const [label, method, path, body, type] of kinds) {
    const first = await exchange(server, method, path, body, type)
    t.ok(first.status >= 200 && first.status < 500, `${label}: answered (HTTP ${first.status})`)
    t.ok(first.bytes <= MAX_ANSWER_BYTES, `${label}: ${first.bytes} bytes sent, at most ${MAX_ANSWER_BYTES}`)
    // Server time per request, over a few (the clock ticks are 10 ms): reported, not asserted.
    const before = cpuMs(server)
    for (let i = 0; i < REPEAT; i++) await exchange(server, method, path, body, type)
    t.comment(
      `${label}: HTTP ${first.status}, ${first.bytes} bytes, ${((cpuMs(server) - before) / REPEAT).toFixed(1)} ms of server CPU per request`,
    )
  }
})
