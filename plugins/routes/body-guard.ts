// Before a body is read: a body the route requires must be there, in a content type it declares
// (Fastify would otherwise parse text/plain and skip validation) and without a content coding. Used by every spec operation
// with a request body and by /mcp.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError, UnreadableBody } from '../errors/codes.js'

export function bodyGuard(types: readonly string[]) {
  return async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    const length = request.headers['content-length']
    const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
    if (!hasBody) {
      throw new UnreadableBody('The request body is empty.', `send the body as ${types.join(' or ')}`)
    }
    // RFC 9110 §8.4: a content coding the server does not decode is refused, not misread as JSON.
    const coding = request.headers['content-encoding']?.trim().toLowerCase()
    if (coding !== undefined && coding !== 'identity') {
      throw new AppError(
        'unsupported_media_type',
        'This operation does not accept compressed (Content-Encoding) bodies.',
        `send the body uncompressed, as ${types.join(' or ')}, without Content-Encoding`,
      )
    }
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
    if (!types.includes(mediaType)) {
      throw new AppError(
        'unsupported_media_type',
        mediaType ? `This operation does not accept ${mediaType} bodies.` : 'The request body has no Content-Type.',
        `send the body as ${types.join(' or ')}, with that Content-Type header`,
      )
    }
    return payload
  }
}
