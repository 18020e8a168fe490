// Requests whose framing or target a proxy in front of the server may read otherwise than Node
// does (request smuggling, RFC 9112 §6.3 and §11.2). llhttp already refuses Content-Length with
// Transfer-Encoding, repeated or malformed Content-Lengths, obs-fold and bad chunk sizes
// (raw.ts); what it lets through is refused here, before the body is read, with 400 and the
// connection closed (what was read of it cannot be trusted):
//
// - more than one Host, or a Host that is no host (RFC 9112 §3.2: "MUST respond with 400");
// - Transfer-Encoding other than exactly one `chunked`: `gzip, chunked` (a coding this server does
//   not decode, so the body is not what it says), `identity` then `chunked` in two fields (read as
//   one list by Node, as two by others);
// - Transfer-Encoding in an HTTP/1.0 request (§6.1: its framing "MUST" be treated as faulty);
// - a field named Transfer_Encoding or Content_Length, which some proxies read as the real one.
import type { IncomingMessage } from 'node:http'
import { AppError } from './codes.js'

/**
 * uri-host [ ":" port ] (RFC 9110 §7.2, RFC 3986 §3.2.2): an IP-literal in brackets, or a
 * reg-name / IPv4 address (unreserved, sub-delims, percent-encoded octets), and digits.
 */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})+)(?::[0-9]*)?$/

const refused = (message: string, hint: string) => new AppError('invalid_request', message, hint, { connection: 'close' })

/** What is wrong with the request's framing or Host, or undefined. */
export function framingProblem(raw: Pick<IncomingMessage, 'rawHeaders' | 'httpVersion'>): AppError | undefined {
  const hosts: string[] = []
  const codings: string[] = []
  for (let i = 0; i < raw.rawHeaders.length; i += 2) {
    const name = (raw.rawHeaders[i] ?? '').toLowerCase()
    const value = raw.rawHeaders[i + 1] ?? ''
    if (name === 'host') hosts.push(value)
    else if (name === 'transfer-encoding') codings.push(value)
    else if (name === 'transfer_encoding' || name === 'content_length') {
      return refused(
        `The request has a ${raw.rawHeaders[i]} header, which some proxies read as ${name.replace('_', '-')}.`,
        'frame the body with Content-Length or Transfer-Encoding: chunked, written with a hyphen',
      )
    }
  }
  if (hosts.length > 1) return refused('The request has more than one Host header.', 'send one Host header: HTTP/1.1 allows exactly one')
  const host = hosts[0]
  if (host !== undefined && !HOST.test(host)) {
    return refused('The Host header is not a host name or address.', 'send Host: the server’s name or address, with an optional :port')
  }
  if (codings.length === 0) return undefined
  if (raw.httpVersion === '1.0') {
    return refused(
      'An HTTP/1.0 request cannot carry Transfer-Encoding.',
      'send the body with Content-Length, or send the request as HTTP/1.1',
    )
  }
  if (codings.length > 1 || codings[0]?.trim().toLowerCase() !== 'chunked') {
    return refused(
      'The request’s Transfer-Encoding is not chunked alone: its body’s framing is ambiguous.',
      'send either one Content-Length or Transfer-Encoding: chunked (no other transfer coding, in one header)',
    )
  }
  return undefined
}
