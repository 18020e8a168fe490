// Slow clients on a real server process (short timeouts, so the test is short): a body trickled
// a byte at a time, headers trickled (slowloris), a body sent without credentials, a client that
// hangs up mid-body. Other clients keep being served meanwhile, and the log gets one info line
// per abandoned request, never a stack.
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import { createConfig } from '../../config.js'
import { testdir } from '../helpers/folders.js'
import { type ServerProcess, sharedSecrets, startServer, tokenFrom } from '../helpers/processes.js'
import { open } from '../helpers/socket.js'

const REQUEST_TIMEOUT = 3
const LEAD = '/scripts/enquiry_backend.php'

async function slowServer(t: Parameters<typeof startServer>[0]): Promise<{ server: ServerProcess; token: string }> {
  const secrets = sharedSecrets()
  const server = await startServer(t, {
    ...secrets,
    DATA_DIR: testdir(t, {}),
    LOG_LEVEL: 'info',
    REQUEST_TIMEOUT_SECONDS: String(REQUEST_TIMEOUT),
    HEADERS_TIMEOUT_SECONDS: '2',
    RATE_LIMITS: 'getProjects=1000',
  })
  return { server, token: await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET) }
}

/** The server's log lines (JSON) that mention `text`. */
const logLines = (server: ServerProcess, text: string) =>
  server
    .output()
    .split('\n')
    .filter((l) => l.includes(text))
    .map((l) => JSON.parse(l) as { level: number; msg: string; [k: string]: unknown })

t.test('the default timeouts bound a whole request to 30 s at most', async (t) => {
  const config = createConfig()
  t.ok(config.requestTimeoutSeconds <= 30, `REQUEST_TIMEOUT_SECONDS defaults to ${config.requestTimeoutSeconds}`)
  t.ok(config.headersTimeoutSeconds <= config.requestTimeoutSeconds, 'headers within the request timeout')
})

t.test('a body trickled a byte at a time is cut off with 408, while other clients are served', async (t) => {
  const { server, token } = await slowServer(t)
  const slow = await open(server.port)
  const body = JSON.stringify({ name: 'Slow Loris', email: 'slow@example.com', phone: '+44 20 7946 0000' }).padEnd(400)
  slow.socket.write(
    `POST ${LEAD} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
  )
  // One byte every 100 ms: the whole body would take 40 s, far beyond the timeout.
  let sent = 0
  const trickle = setInterval(() => {
    if (sent < body.length && !slow.socket.destroyed) slow.socket.write(body[sent++] ?? ' ')
  }, 100)
  t.teardown(() => clearInterval(trickle))

  // Meanwhile, other clients are served.
  const others: number[] = []
  for (let i = 0; i < 10; i++) {
    const res = await fetch(`${server.url}/project_metadata.json`, { headers: { authorization: `Bearer ${token}` } })
    others.push(res.status)
    await res.arrayBuffer()
    await sleep(100)
  }
  t.same(others, Array(10).fill(200), 'other clients are served while the slow one trickles')

  t.ok(await slow.closed(30_000), 'the server closes the trickling connection')
  clearInterval(trickle)
  t.ok(sent < body.length, `closed before the body was complete (${sent} of ${body.length} bytes sent)`)
  const answer = slow.received()
  t.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/, 'answered 408')
  const json = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
  t.equal(json.code, 'request_timeout', 'in the Error shape')
  t.match(json.message, new RegExp(`${REQUEST_TIMEOUT} seconds`))
  const noLead = await fetch(`${server.url}/leads.json`, { headers: { authorization: `Bearer ${token}` } })
  t.same(await noLead.json(), [], 'nothing was stored')
  await server.waitFor(/request refused before it could be read/)
  t.notMatch(server.output(), /"stack"/, 'no stack trace in the log')
  t.ok(
    logLines(server, 'request refused before it could be read').some((l) => l.level === 30 && l.reason === 'ERR_HTTP_REQUEST_TIMEOUT'),
    'one info line says the request timed out',
  )
})

t.test('headers trickled a byte at a time (slowloris) are cut off too', async (t) => {
  const { server } = await slowServer(t)
  const slow = await open(server.port)
  const head = 'GET /project_metadata.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n'
  let sent = 0
  const trickle = setInterval(() => {
    if (sent < head.length && !slow.socket.destroyed) slow.socket.write(head[sent++] ?? ' ')
  }, 100)
  t.teardown(() => clearInterval(trickle))
  t.ok(await slow.closed(30_000), 'the server closes the connection')
  clearInterval(trickle)
  t.ok(sent < head.length, `before the headers were complete (${sent} of ${head.length} bytes)`)
  t.match(slow.received(), /^HTTP\/1\.1 408 /, 'answered 408')
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'the server is fine')
})

t.test('a body without credentials is refused before it is read, and the connection closed', async (t) => {
  const { server } = await slowServer(t)
  const c = await open(server.port)
  c.socket.write(`POST ${LEAD} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 16000\r\n\r\n{`)
  const res = await c.response(10_000)
  t.equal(res?.status, 401, 'answered 401 after one byte of a 16,000-byte body')
  t.equal(JSON.parse(res?.body ?? '{}').code, 'unauthorized')
  t.equal(res?.headers.connection, 'close', 'Connection: close')
  t.match(res?.headers['x-ratelimit-limit'], /^\d+$/, 'with the rate-limit headers')
  t.ok(await c.closed(10_000), 'the server closes the connection instead of waiting for the rest')
})

t.test('a client that hangs up mid-body: one info line, no stack', async (t) => {
  const { server, token } = await slowServer(t)
  const c = await open(server.port)
  c.socket.write(
    `POST ${LEAD} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 500\r\nX-Request-Id: hang-up-1\r\n\r\n{"name":`,
  )
  await sleep(300)
  c.socket.destroy()
  // The server notices on its next turn and says so in one line.
  await server.waitFor(/"hang-up-1".*closed before the request was complete|closed before the request was complete.*"hang-up-1"/)
  t.equal((await fetch(`${server.url}/healthz`)).status, 200)
  const lines = server
    .output()
    .split('\n')
    .filter((l) => l.includes('"hang-up-1"'))
    .map((l) => JSON.parse(l) as { level: number; msg: string })
  t.equal(lines.length, 1, `one line for the abandoned request: ${lines.map((l) => l.msg).join(' | ')}`)
  t.equal(lines[0]?.level, 30, 'at info level')
  t.match(lines[0]?.msg, /closed before the request was complete/)
  t.notMatch(server.output(), /"stack"/, 'no stack trace')
  t.notMatch(server.output(), /"level":50/, 'no error line')
})
