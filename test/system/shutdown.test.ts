// SIGTERM with a request in flight on a keep-alive connection, and with a client that stops
// reading: the shutdown finishes the request, closes the connection, closes every plugin and
// exits 0 (close-with-grace exits 1 when the shutdown outlasts its 10 s, and KEEP_ALIVE_TIMEOUT_SECONDS
// is 72: a connection left open after its response used to hold the server until then). Exit
// codes and the lead's presence, not timings.
import { once } from 'node:events'
import { Agent, type IncomingMessage, request } from 'node:http'
import { connect } from 'node:net'
import t from 'tap'
import { testdir } from '../helpers/folders.js'
import { sharedSecrets, startServer, tokenFrom } from '../helpers/processes.js'

const LEAD = '/scripts/enquiry_backend.php'

/** Resolves once `port` refuses connections. */
async function refused(port: number): Promise<void> {
  for (;;) {
    const socket = connect(port, '127.0.0.1')
    // events.once rejects on 'error': a refused connection.
    const outcome = await once(socket, 'connect').then(
      () => 'open',
      () => 'refused',
    )
    socket.destroy()
    if (outcome === 'refused') return
    await new Promise((r) => setTimeout(r, 20))
  }
}

t.test('a lead in flight at SIGTERM on a keep-alive connection: answered, stored, exit 0', async (t) => {
  const secrets = sharedSecrets()
  const env = { ...secrets, DATA_DIR: `${testdir(t, { data: {} })}/data` }
  const server = await startServer(t, env)
  const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const body = JSON.stringify({ name: 'Ada Lovelace', email: 'ada.shutdown@example.com', phone: '+44 20 7946 0958' })
  const req = request(`${server.url}${LEAD}`, {
    method: 'POST',
    agent,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      expect: '100-continue',
    },
  })
  const answered = once(req, 'response') as Promise<[IncomingMessage]>
  // Expect: 100-continue: the server invites the body only once the request is past its gates
  // (plugins/errors), so at 'continue' the request is in flight, whatever the machine's speed.
  const invited = once(req, 'continue')
  req.flushHeaders()
  await invited
  const stopped = server.stop()
  // The shutdown has begun once the port refuses new connections (server.close() stops listening).
  await refused(server.port)
  req.end(body)
  const [res] = await answered
  const text = (await res.toArray()).join('')
  t.equal(res.statusCode, 200, `the lead in flight was answered (${text})`)
  const receipt = JSON.parse(text) as { id: string }
  t.equal(await stopped, 0, 'exit 0: the keep-alive connection was closed after its response, every plugin closed')

  const again = await startServer(t, { ...env, PORT: String(server.port) })
  const token2 = await tokenFrom(again.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  const log = (await (await fetch(`${again.url}/leads.json`, { headers: { authorization: `Bearer ${token2}` } })).json()) as {
    id: string
  }[]
  t.ok(
    log.some((l) => l.id === receipt.id),
    'the acknowledged lead is stored',
  )
  t.equal(await again.stop(), 0)
})

t.test('a client that stops reading a response at SIGTERM: its connection is cut, exit 0', async (t) => {
  const secrets = sharedSecrets()
  const server = await startServer(t, { ...secrets, DATA_DIR: `${testdir(t, { data: {} })}/data` })
  // Swagger UI's script, uncompressed (about 1.5 MB), asked for 20 times on one connection
  // (pipelined): far more than the socket buffers hold when the client reads nothing, so a
  // response stays in progress.
  const socket = connect(server.port, '127.0.0.1')
  await once(socket, 'connect')
  t.teardown(() => socket.destroy())
  // The first bytes of the answer, then the client reads no more: the response is in progress.
  const answering = new Promise<void>((resolve) =>
    socket.once('data', () => {
      socket.pause()
      resolve()
    }),
  )
  socket.write('GET /docs/static/swagger-ui-bundle.js HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept-Encoding: identity\r\n\r\n'.repeat(20))
  await answering
  const closed = once(socket, 'close')
  t.equal(await server.stop(), 0, 'exit 0: the stalled response was cut within the shutdown, every plugin closed')
  socket.resume()
  await closed
  t.ok(server.output().includes('shutdown: closing connections whose responses have not finished'), 'the cut is logged')
})
