// Answers written to the socket before there is a request to answer: Node's 'clientError' (what
// the HTTP parser refuses, headers over the limit, a request that did not arrive in time) and
// CONNECT requests. Fastify's default writes its own body shape; these are the Error shape like
// every other answer, with X-API-Version and an X-Request-Id for the log line. The path is not
// known (it may be the token endpoint), so they carry the RFC 6749 fields too. The connection
// is closed: what was read of it cannot be trusted.
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import { AppError } from './codes.js'
import { oauthFields } from './oauth.js'

/** What a refusal of Node's HTTP parser (or its request timeout) means for the client. */
export function parserRefusal(code: string | undefined, requestTimeoutSeconds: number): AppError {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError(
        'request_timeout',
        `The request did not arrive within ${requestTimeoutSeconds} seconds; the connection is closed.`,
        'send the headers and the body without pausing',
      )
    case 'HPE_HEADER_OVERFLOW':
      return new AppError('headers_too_large', undefined, 'send at most 16 KiB of request line and headers')
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new AppError('payload_too_large', 'The chunk extensions of the body are too large.', 'send the body without chunk extensions')
    case 'HPE_INVALID_VERSION':
      return new AppError('http_version_not_supported', undefined, 'send the request as HTTP/1.1')
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return new AppError(
        'invalid_request',
        'The length of the body is ambiguous: Content-Length and Transfer-Encoding together, or a repeated or unreadable Content-Length.',
        'send either one Content-Length or Transfer-Encoding: chunked',
      )
    case 'HPE_INVALID_METHOD':
      return new AppError('invalid_request', 'The request method is not one HTTP defines.', 'use GET, HEAD or POST')
    default:
      return new AppError('invalid_request', 'The request is not valid HTTP/1.1.', 'check the request line and the header names and values')
  }
}

/** Writes `error` as a whole HTTP/1.1 response and closes the connection once it is sent. */
export function writeRawError(socket: Duplex, error: AppError, version: string, requestId: string): void {
  const body = JSON.stringify({ ...error.toBody(), ...oauthFields(error) })
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-API-Version': version,
    'X-Request-Id': requestId,
    Connection: 'close',
    ...error.headers,
  }
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
  socket.end(`HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n${head}\r\n${body}`, () => socket.destroy())
}

interface InFlight {
  /** Node's response of the request being read on this socket, if any (set by node:http). */
  _httpMessage?: { headersSent?: boolean } | null
}

/**
 * Fastify's `clientErrorHandler`. As Node does by default, nothing is written once a response
 * has started on the socket (it would corrupt it), nor to a socket already gone; one info line,
 * never the request's bytes.
 */
export function clientErrorHandler(version: string, requestTimeoutSeconds: number) {
  return function onClientError(this: { log: FastifyBaseLogger }, err: Error & { code?: string }, socket: Duplex): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const error = parserRefusal(err.code, requestTimeoutSeconds)
    const reqId = randomUUID()
    this.log.info({ reqId, status: error.statusCode, reason: err.code }, 'request refused before it could be read')
    if (socket.writable && !(socket as unknown as InFlight)._httpMessage?.headersSent) writeRawError(socket, error, version, reqId)
    else socket.destroy()
  }
}

/** CONNECT asks for a tunnel: this server is not a proxy. */
export function refuseConnect(socket: Duplex, version: string): void {
  writeRawError(
    socket,
    new AppError(
      'method_not_allowed',
      'This server is not a proxy: CONNECT is not accepted.',
      'send requests for this server’s own paths',
      {
        Allow: 'GET, HEAD, POST',
      },
    ),
    version,
    randomUUID(),
  )
}
