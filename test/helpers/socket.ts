// Raw HTTP/1.1 over a TCP socket, for what fetch cannot send: malformed requests, bodies that
// arrive a byte at a time, clients that hang up mid-body.
import { connect, type Socket } from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** The whole answer as received. */
  raw: string
}

/** Parses one HTTP/1.1 response (Content-Length bodies; what the tests' servers send). */
export function parseResponse(raw: string): RawResponse | undefined {
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const [statusLine = '', ...lines] = raw.slice(0, end).split('\r\n')
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1])
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const length = Number(headers['content-length'] ?? Number.NaN)
  const rest = raw.slice(end + 4)
  return { status, headers, body: Number.isNaN(length) ? rest : rest.slice(0, length), raw }
}

export interface Conversation {
  socket: Socket
  /** Everything received so far. */
  received(): string
  /** Resolves when the server has closed the connection (or `ms` passed: a safety net). */
  closed(ms: number): Promise<boolean>
  /** Resolves once a whole response has arrived (or undefined after `ms`). */
  response(ms: number): Promise<RawResponse | undefined>
}

export function open(port: number, host = '127.0.0.1'): Promise<Conversation> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host)
    let data = ''
    let isClosed = false
    socket.on('data', (d) => {
      data += d
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      isClosed = true
    })
    const conversation: Conversation = {
      socket,
      received: () => data,
      closed: (ms) =>
        new Promise((done) => {
          if (isClosed) return done(true)
          const timer = setTimeout(() => done(false), ms)
          socket.once('close', () => {
            clearTimeout(timer)
            done(true)
          })
        }),
      response: (ms) =>
        new Promise((done) => {
          const deadline = Date.now() + ms
          const poll = () => {
            const parsed = parseResponse(data)
            const whole =
              parsed &&
              (parsed.headers['content-length'] === undefined || Buffer.byteLength(parsed.body) >= Number(parsed.headers['content-length']))
            if (whole) return done(parsed)
            if (isClosed || Date.now() > deadline) return done(parsed)
            setTimeout(poll, 20)
          }
          poll()
        }),
    }
    socket.once('connect', () => resolve(conversation))
    socket.once('error', reject)
  })
}

/** Sends `request` on a new connection and returns the answer once the server closes it or `ms` passed. */
export async function exchange(port: number, request: string, ms = 5000): Promise<RawResponse | undefined> {
  const c = await open(port)
  c.socket.write(request)
  const res = await c.response(ms)
  c.socket.destroy()
  return res
}
