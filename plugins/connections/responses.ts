// The responses in progress on each connection, from node:http's public 'request' event: a
// response is in progress from its request's arrival until the response emits 'close' (finished,
// or its connection gone). Pipelined requests queue their responses behind the first; all of them
// count. The connection watcher (index.ts) and the raw answers to parser refusals (../errors/raw.ts)
// read it, instead of the socket's own link to its response (node:http's undocumented
// `socket._httpMessage`).
import type { IncomingMessage, Server, ServerResponse } from 'node:http'

/** By socket: its responses not yet closed. Weak: a socket gone takes its entry with it. */
const inProgress = new WeakMap<object, Set<ServerResponse>>()
const tracked = new WeakSet<Server>()

/** Follows every response of `server` from its request on (once per server; more calls do nothing). */
export function trackResponses(server: Server): void {
  if (tracked.has(server)) return
  tracked.add(server)
  // 'request' is emitted synchronously as node:http hands a parsed request over, the response's
  // 'close' at the earliest a tick after it finishes: the listener below is always on time.
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket
    let responses = inProgress.get(socket)
    if (!responses) {
      responses = new Set()
      inProgress.set(socket, responses)
    }
    const mine = responses
    mine.add(response)
    response.once('close', () => mine.delete(response))
  })
}

/** Whether a response is in progress on `socket` (a request being answered, or queued behind one). */
export function responseInProgress(socket: object): boolean {
  return (inProgress.get(socket)?.size ?? 0) > 0
}

/** Whether a response on `socket` has started (its status line and headers written or queued): nothing else may be written there. */
export function responseStarted(socket: object): boolean {
  for (const response of inProgress.get(socket) ?? []) if (response.headersSent) return true
  return false
}
