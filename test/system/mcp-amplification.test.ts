// What one anonymous request to /mcp can make the server send, on a real server process: the
// bytes that arrive on the client's socket for each kind of request, and the server's CPU time
// per request (from /proc/<pid>/stat). Bytes are asserted (no anonymous request may cost more than
// a few hundred KB: the largest answer is one app view, ~270 KB); times are reported, not asserted
// (the machine is shared and loaded; README "Security" has the figures). Before batches were
// refused, a 10 KB batch of 100 resources/read made 27 MB.
import { readFileSync } from 'node:fs'
import { connect as tcp } from 'node:net'
import t from 'tap'
import { MCP_BODY_LIMIT } from '../../features/mcp/index.js'
import { testdir } from '../helpers/folders.js'
import { type ServerProcess, startServer } from '../helpers/processes.js'

/** "A few hundred KB": what one anonymous request may make the server send, at most. */
const MAX_ANSWER_BYTES = 400 * 1024

interface Exchange {
  status: number
  /** Every byte that arrived on the socket: status line, headers and body. */
  bytes: number
  /** Whether the server closed the connection after its answer, as the request asked. */
  closed: boolean
}

/** Long enough for any answer here on a loaded machine; a connection still open then was kept open. */
const ANSWER_WITHIN_MS = 20_000

/** One POST /mcp on a connection of its own (Connection: close), counting the bytes that arrive. */
function exchange(server: ServerProcess, body: string | Buffer, headers: Record<string, string> = {}): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const payload = Buffer.isBuffer(body) ? body : Buffer.from(body)
    const head = {
      host: `127.0.0.1:${server.port}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'content-length': String(payload.length),
      connection: 'close',
      ...headers,
    }
    const socket = tcp(server.port, '127.0.0.1')
    const chunks: Buffer[] = []
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('error', reject)
    const done = (closed: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      const all = Buffer.concat(chunks)
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(all.subarray(0, 20).toString())?.[1]), bytes: all.length, closed })
    }
    const timer = setTimeout(() => done(false), ANSWER_WITHIN_MS)
    socket.on('end', () => done(true))
    socket.write(
      `POST /mcp HTTP/1.1\r\n${Object.entries(head)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`,
    )
    // Not half-closed: the server closes the connection after its answer (Connection: close).
    socket.write(payload)
  })
}

/** The server process's CPU time so far (user + system), in milliseconds. */
function cpuMs(server: ServerProcess): number {
  const stat = readFileSync(`/proc/${server.child.pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime and stime are fields 14 and 15 of stat(5), the 12th and 13th after the command's ")".
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

const rpc = (id: number, method: string, params?: object) => ({ jsonrpc: '2.0', id, method, ...(params && { params }) })
/** A batch of pings as long as the body limit allows. */
function fullBatch(): string {
  const pings: object[] = []
  while (JSON.stringify([...pings, rpc(pings.length, 'ping')]).length <= MCP_BODY_LIMIT) pings.push(rpc(pings.length, 'ping'))
  return JSON.stringify(pings)
}
const call = (id: number, name: string, args: object) => rpc(id, 'tools/call', { name, arguments: args })

t.test('no anonymous request to /mcp makes the server send more than a few hundred KB', async (t) => {
  const server = await startServer(t, {
    DATA_DIR: `${testdir(t, { data: {} })}/data`,
    RATE_LIMITS: 'mcp=1000000',
    PUBLIC_HOST: 'studio.test',
  })
  const host = 'studio.test'
  const views = ['playbook', 'pricing-estimator'].map((name) => `ui://${host}/${name}`)
  const read = (id: number, uri: string) => rpc(id, 'resources/read', { uri })

  // The audit's request: a 10 KB batch of resources/read for the two views (27 MB before).
  const batch = JSON.stringify(Array.from({ length: 100 }, (_, i) => read(i, views[i % 2] as string)))
  const kinds: [string, string][] = [
    [`a batch of 100 resources/read (${batch.length} bytes)`, batch],
    ['a batch that fills the body limit', fullBatch()],
    ...views.map((uri, i): [string, string] => [`resources/read ${uri}`, JSON.stringify(read(i, uri))]),
    ['resources/list', JSON.stringify(rpc(1, 'resources/list'))],
    ['tools/list', JSON.stringify(rpc(1, 'tools/list'))],
    ['list_projects, unfiltered', JSON.stringify(call(1, 'list_projects', {}))],
    ['show_playbook, unfiltered', JSON.stringify(call(1, 'show_playbook', {}))],
    ['show_pricing_estimator', JSON.stringify(call(1, 'show_pricing_estimator', {}))],
    ['estimate_price', JSON.stringify(call(1, 'estimate_price', { area_sqm: 120, style: 'japandi' }))],
    [
      'a body just under the limit (an argument of ~63 KB)',
      JSON.stringify(call(1, 'estimate_price', { area_sqm: 120, style: 'x'.repeat(MCP_BODY_LIMIT - 200) })),
    ],
    ['a body over the limit', JSON.stringify(call(1, 'list_projects', { style: 'x'.repeat(MCP_BODY_LIMIT) }))],
    ['malformed JSON', '{"jsonrpc": "2.0", "id": 1, "method": '],
  ]
  const REPEAT = 20
  for (const [label, body] of kinds) {
    const first = await exchange(server, body)
    t.ok(first.bytes <= MAX_ANSWER_BYTES, `${label}: ${first.bytes} bytes sent (HTTP ${first.status}), at most ${MAX_ANSWER_BYTES}`)
    t.ok(first.closed, `${label}: the connection closed after the answer, as asked`)
    // Server time per request, over a few (the clock ticks are 10 ms): reported, not asserted.
    const before = cpuMs(server)
    for (let i = 0; i < REPEAT; i++) await exchange(server, body)
    t.comment(
      `${label}: HTTP ${first.status}, ${first.bytes} bytes, ${((cpuMs(server) - before) / REPEAT).toFixed(1)} ms of server CPU per request`,
    )
  }
  const refused = await exchange(server, batch)
  t.equal(refused.status, 400, 'a batch is refused')
  t.ok(refused.bytes < 4096, `and its answer is small (${refused.bytes} bytes)`)
})

t.test('clients that never read: each holds at most one answer, and the server keeps serving', async (t) => {
  const server = await startServer(t, {
    DATA_DIR: `${testdir(t, { data: {} })}/data`,
    RATE_LIMITS: 'mcp=1000000',
    PUBLIC_HOST: 'studio.test',
  })
  const uri = 'ui://studio.test/playbook'
  const batch = JSON.stringify(Array.from({ length: 100 }, (_, i) => rpc(i, 'resources/read', { uri })))
  const single = JSON.stringify(rpc(1, 'resources/read', { uri }))
  const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))?.[1])
  await exchange(server, single) // the SDK is loaded by the first request to /mcp
  const before = rssKb()
  // Eight clients send the audit's batch, eight the largest single request, and none reads.
  const sockets = [...Array(8).fill(batch), ...Array(8).fill(single)].map((body: string) => {
    const socket = tcp(server.port, '127.0.0.1')
    socket.pause()
    socket.write(
      `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
    )
    return socket
  })
  t.teardown(() => {
    for (const s of sockets) s.destroy()
  })
  await new Promise((r) => setTimeout(r, 2000))
  const started = Date.now()
  const health = await fetch(`${server.url}/healthz`)
  t.equal(health.status, 200, '/healthz answers meanwhile')
  t.comment(
    `/healthz in ${Date.now() - started} ms with 16 clients not reading; server RSS ${before} KB before them, ${rssKb()} KB with them`,
  )
  const probe = await exchange(server, batch)
  t.equal(probe.status, 400, 'the batch, from a client that reads: refused')
  t.ok(probe.bytes < 4096, `in ${probe.bytes} bytes`)
})
