// CONNECTION_TIMEOUT_SECONDS, kept to the second for responses a client stops reading.
//
// Fastify's connectionTimeout is Node's socket inactivity timeout, and Node lets a connection with
// a write pending overstay it by a whole period: when the timer fires and the bytes waiting for
// the kernel differ from the size of the last write, net.Socket's _onTimeout takes that for
// progress, re-arms and waits once more. A client that stops reading mid-response leaves exactly
// that state behind, so it was closed after twice the setting (124 s for 60).
//
// So the connections with a response in progress (responses.ts) are watched here: every second (a
// quarter of the setting when it is shorter), the bytes read from each, the bytes handed to it and
// the bytes it still buffers, all public counters of net.Socket (the buffer shrinks each time the
// kernel has taken a whole write: a streamed response's chunk, a file's 64 KiB read). A connection
// on which none of them moved for the setting is closed. Node's timer stays for the rest, where it
// is on time: a connection that never sends a request, idle keep-alive connections
// (KEEP_ALIVE_TIMEOUT_SECONDS), and it remains a backstop.
// What the public counters cannot see is progress inside one write: a body written at once (every
// JSON answer) has moved when the kernel has taken all of it. A client would have to take longer
// than the setting over one such body to be closed while it still reads: the largest, an MCP
// app's view (about 300 KB), read at under 5 KB/s with the default 60 s.
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { responseInProgress, trackResponses } from './responses.js'

/** What moves on a connection while a response is in progress: any change is progress. */
function movement(socket: Socket): string {
  return `${socket.bytesRead}:${socket.bytesWritten}:${socket.writableLength}`
}

export interface ConnectionWatch {
  stop(): void
}

/**
 * Closes every connection of `server` whose response has not moved for `timeoutMs`; `closed` is
 * called for each (a log line). Checks every `min(1 s, timeoutMs / 4)`.
 */
export function watchConnections(server: Server, timeoutMs: number, closed: () => void): ConnectionWatch {
  const sockets = new Set<Socket>()
  const seen = new WeakMap<Socket, { movement: string; since: number }>()
  trackResponses(server)
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  })
  const check = () => {
    const now = Date.now()
    for (const socket of sockets) {
      if (!responseInProgress(socket) || socket.destroyed) {
        seen.delete(socket)
        continue
      }
      const moved = movement(socket)
      const last = seen.get(socket)
      if (!last || last.movement !== moved) {
        seen.set(socket, { movement: moved, since: now })
      } else if (now - last.since >= timeoutMs) {
        seen.delete(socket)
        socket.destroy()
        closed()
      }
    }
  }
  const timer = setInterval(check, Math.min(1000, Math.max(50, timeoutMs / 4)))
  timer.unref()
  return { stop: () => clearInterval(timer) }
}

/**
 * How long a shutdown waits for responses in progress before it closes their connections: half
 * of the 10 s server.ts gives the whole shutdown, the rest for the plugins to close.
 */
const SHUTDOWN_DRAIN_MS = 5_000

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const seconds = config.connectionTimeoutSeconds
    const watch = watchConnections(app.server, seconds * 1000, () =>
      app.log.info({ seconds }, 'connection closed: its response did not move for CONNECTION_TIMEOUT_SECONDS'),
    )
    // Shutdown. Node's server.close() closes the connections that are idle at that moment, and
    // then waits for the others: one whose request was in flight stays open after its response
    // for KEEP_ALIVE_TIMEOUT_SECONDS (72 s), longer than the whole shutdown may take, so the
    // process was cut off at its deadline, exit 1, before the plugins had closed. Here each is
    // closed as soon as its response is done, and whatever still has a response in progress
    // after SHUTDOWN_DRAIN_MS (a client that stopped reading, a long stream) is cut, so the
    // plugins close in time (test/system/shutdown.test.ts).
    let draining: NodeJS.Timeout | undefined
    let cut: NodeJS.Timeout | undefined
    app.addHook('preClose', async () => {
      draining = setInterval(() => app.server.closeIdleConnections(), 50)
      cut = setTimeout(() => {
        app.log.warn({ after_ms: SHUTDOWN_DRAIN_MS }, 'shutdown: closing connections whose responses have not finished')
        app.server.closeAllConnections()
      }, SHUTDOWN_DRAIN_MS)
    })
    app.addHook('onClose', async () => {
      watch.stop()
      clearInterval(draining)
      clearTimeout(cut)
    })
  },
  { name: 'connections', fastify: '5.x' },
)
