// Answers written to the socket before there is a request to answer: Node's 'clientError' (what
// the HTTP parser refuses, headers over the limit, a request that did not arrive in time) and
// CONNECT requests. Fastify's default writes its own body shape; these are the Error shape like
// every other answer, with the API's security headers and X-API-Version (plugins/headers, the
// same object every JSON answer gets) and an X-Request-Id for the log line. The path is not
// known (it may be the token endpoint), so they carry the RFC 6749 fields too. The connection
// is closed: what was read of it cannot be trusted.
import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyBaseLogger } from 'fastify'
import { responseStarted } from '../connections/responses.js'
import type { Headers } from '../headers/index.js'
import { AppError } from './codes.js'
import { oauthFields } from './oauth.js'

/** What Node's HTTP parser says when it refuses a request (llhttp's code and reason, the bytes it was reading). */
export interface ParserError {
  code?: string | undefined
  reason?: string | undefined
  /** A Buffer at run time (Fastify's types say otherwise). */
  rawPacket?: unknown
}

/** A line of the request line or headers ends with LF alone (RFC 9112 §2.2: a server may refuse it). */
function hasBareLf(raw: unknown): boolean {
  if (!Buffer.isBuffer(raw)) return false
  const head = raw.subarray(0, raw.indexOf('\r\n\r\n') >= 0 ? raw.indexOf('\r\n\r\n') + 2 : raw.length)
  for (let i = head.indexOf(10); i >= 0; i = head.indexOf(10, i + 1)) if (i > 0 && head[i - 1] !== 13) return true
  return false
}

const bareLf = () =>
  new AppError(
    'invalid_request',
    'A line of the request ends with a bare LF.',
    'end the request line and every header line with CRLF (\\r\\n), as HTTP/1.1 requires',
  )

/** 505: every HTTP version but 1.0 and 1.1 (llhttp refuses most; HTTP/0.9 and 2.0 reach the app, plugins/errors). */
export const versionNotSupported = () =>
  new AppError('http_version_not_supported', undefined, 'send the request as HTTP/1.1', { connection: 'close' })

/** What a refusal of Node's HTTP parser (or its request timeout) means for the client. */
export function parserRefusal(err: ParserError, requestTimeoutSeconds: number): AppError {
  const { code, reason } = err
  if (code !== 'ERR_HTTP_REQUEST_TIMEOUT' && code !== 'HPE_HEADER_OVERFLOW' && hasBareLf(err.rawPacket)) return bareLf()
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
      // A version llhttp read whole but something other than CRLF after it (a space, a third
      // digit...): the request line is malformed, the version itself may be fine.
      if (reason === 'Expected CRLF after version') {
        return new AppError(
          'invalid_request',
          'The request line does not end right after the HTTP version.',
          'end the request line with the version and CRLF, e.g. GET / HTTP/1.1',
        )
      }
      return versionNotSupported()
    case 'HPE_PAUSED_H2_UPGRADE':
      // The HTTP/2 connection preface (PRI * HTTP/2.0): this server speaks HTTP/1.x only.
      return new AppError('http_version_not_supported', undefined, 'send the request as HTTP/1.1 (HTTP/2 is not offered on this port)')
    case 'HPE_CR_EXPECTED':
    case 'HPE_STRICT':
      return new AppError(
        'invalid_request',
        'A line of the request does not end with CRLF.',
        'end the request line and every header line with CRLF (\\r\\n), as HTTP/1.1 requires',
      )
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

/**
 * Writes `error` as a whole HTTP/1.1 response and closes the connection once it is sent, with
 * `apiHeaders`: the API's security headers and X-API-Version (plugins/headers).
 */
export function writeRawError(socket: Duplex, error: AppError, apiHeaders: Headers, requestId: string): void {
  const body = JSON.stringify({ ...error.toBody(), ...oauthFields(error) })
  const headers = {
    ...apiHeaders,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'cache-control': 'no-store',
    'x-request-id': requestId,
    ...error.headers,
    connection: 'close',
  }
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')
  socket.end(`HTTP/1.1 ${error.statusCode} ${STATUS_CODES[error.statusCode]}\r\n${head}\r\n${body}`, () => socket.destroy())
}

/**
 * Fastify's `clientErrorHandler`. As Node does by default, nothing is written once a response
 * has started on the socket (it would corrupt it; the responses are the ones plugins/connections
 * tracks), nor to a socket already gone; one info line, never the request's bytes.
 */
export function clientErrorHandler(apiHeaders: Headers, requestTimeoutSeconds: number) {
  return function onClientError(this: { log: FastifyBaseLogger }, err: Error & ParserError, socket: Duplex): void {
    if (err.code === 'ECONNRESET' || socket.destroyed) return
    const error = parserRefusal(err, requestTimeoutSeconds)
    const reqId = randomUUID()
    this.log.info({ reqId, status: error.statusCode, reason: err.code }, 'request refused before it could be read')
    if (socket.writable && !responseStarted(socket)) writeRawError(socket, error, apiHeaders, reqId)
    else socket.destroy()
  }
}

/** CONNECT asks for a tunnel: this server is not a proxy. */
export function refuseConnect(socket: Duplex, apiHeaders: Headers): void {
  writeRawError(
    socket,
    new AppError(
      'method_not_allowed',
      'This server is not a proxy: CONNECT is not accepted.',
      'send requests for this server’s own paths',
      {
        allow: 'GET, HEAD, POST',
      },
    ),
    apiHeaders,
    randomUUID(),
  )
}
