// The responses in progress on each connection (plugins/connections/responses.ts), read from
// node:http's public events instead of its sockets' internals, as the two places that need them
// use them: the raw answer to a request Node's parser refuses (plugins/errors/raw.ts: nothing is
// written into a response that has started) and the connection watcher (plugins/connections:
// only connections with a response in progress are watched). A real node:http server, real
// sockets, the real handlers.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import pino from 'pino'
import t, { type Test } from 'tap'
import { watchConnections } from '../../plugins/connections/index.js'
import { responseInProgress, trackResponses } from '../../plugins/connections/responses.js'
import { clientErrorHandler } from '../../plugins/errors/raw.js'
import { open } from '../helpers/socket.js'

const API_HEADERS = { 'x-content-type-options': 'nosniff', 'x-api-version': 'test' }

/** A node:http server with the API's clientError handler, requests timed out after 1 s; its log lines. */
async function server(t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const lines: { msg: string; reason?: string }[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    },
  })
  const log = pino({ level: 'info' }, sink) as unknown as FastifyBaseLogger
  const http: Server = createServer({ requestTimeout: 1000, connectionsCheckingInterval: 100 }, handler)
  trackResponses(http)
  http.on('clientError', clientErrorHandler(API_HEADERS, 1).bind({ log }))
  await new Promise<void>((ready) => http.listen(0, '127.0.0.1', ready))
  t.teardown(() => {
    http.closeAllConnections()
    http.close()
  })
  return { port: (http.address() as AddressInfo).port, lines, http }
}

/** A POST whose body never arrives whole: Node's request timeout refuses it after 1 s. */
const incomplete = (path: string) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nabc`

t.test(
  'a request that times out after its response has started: the connection is closed, nothing written into the response',
  async (t) => {
    const open200 = new Set<ServerResponse>()
    const { port, lines } = await server(t, (_req, res) => {
      // Starts the answer at once and never finishes it (the body is still arriving).
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' })
      res.write('partial ')
      open200.add(res)
    })
    t.teardown(() => {
      for (const res of open200) res.destroy()
    })
    const c = await open(port)
    c.socket.write(incomplete('/started'))
    t.ok(await c.closed(10_000), 'the server closes the connection')
    const received = c.received()
    t.match(received, /^HTTP\/1\.1 200 OK\r\n/, 'the response had started')
    t.notMatch(received, /408|request_timeout/, 'no 408 written into it')
    t.ok(
      lines.some((l) => l.msg === 'request refused before it could be read' && l.reason === 'ERR_HTTP_REQUEST_TIMEOUT'),
      'one info line says why',
    )
  },
)

t.test('a request that times out before its response has started: answered 408 in the Error shape', async (t) => {
  const pending = new Set<ServerResponse>()
  const { port } = await server(t, (_req, res) => {
    // In progress, nothing written yet: waits for the body.
    pending.add(res)
  })
  t.teardown(() => {
    for (const res of pending) res.destroy()
  })
  const c = await open(port)
  c.socket.write(incomplete('/waiting'))
  const res = await c.response(10_000)
  t.equal(res?.status, 408, 'answered 408')
  t.equal(JSON.parse(res?.body ?? '{}').code, 'request_timeout', 'in the Error shape')
  t.equal(res?.headers['x-api-version'], 'test', "with the API's headers")
  t.ok(await c.closed(10_000), 'and the connection closed')
})

t.test('a response counts as in progress from its request until it is done, on a keep-alive connection too', async (t) => {
  let hold: ServerResponse | undefined
  const { port, http } = await server(t, (req, res) => {
    if (req.url === '/hold') hold = res
    else res.end('done')
  })
  const c = await open(port)
  let serverSocket: object | undefined
  http.once('request', (req: IncomingMessage) => {
    serverSocket = req.socket
  })
  c.socket.write('GET /quick HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  const first = await c.response(5000)
  t.equal(first?.status, 200)
  // The response's 'close' follows its end by a tick.
  await new Promise((resolve) => setImmediate(resolve))
  t.ok(serverSocket, 'the request arrived')
  t.notOk(responseInProgress(serverSocket as object), 'none in progress once answered (the connection stays open)')
  c.socket.write('GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  while (!hold) await new Promise((resolve) => setTimeout(resolve, 10))
  t.ok(responseInProgress(serverSocket as object), 'in progress while the handler holds it')
  hold.end('late')
  await new Promise((resolve) => hold?.once('close', resolve))
  t.notOk(responseInProgress(serverSocket as object), 'done once it is closed')
})

t.test('the connection watcher closes a connection whose response stands still, and leaves an idle keep-alive one open', async (t) => {
  const held = new Set<ServerResponse>()
  const { port, http } = await server(t, (req, res) => {
    if (req.url === '/hold') held.add(res)
    else res.end('done')
  })
  t.teardown(() => {
    for (const res of held) res.destroy()
  })
  http.keepAliveTimeout = 60_000
  let closedByWatch = 0
  const watch = watchConnections(http, 400, () => closedByWatch++)
  t.teardown(() => watch.stop())

  const idle = await open(port)
  idle.socket.write('GET /quick HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  t.equal((await idle.response(5000))?.status, 200, 'answered, then idle on its keep-alive connection')
  const stuck = await open(port)
  stuck.socket.write('GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
  t.ok(await stuck.closed(5000), 'the connection whose response did not move is closed')
  t.equal(closedByWatch, 1, 'by the watcher, once')
  t.notOk(await idle.closed(1500), 'the idle keep-alive connection, with no response in progress, is left to its own timeout')
})
