// The deprecation headers of an operation the spec deprecates (plugins/spec/deprecation.ts): on
// every response of its route, errors included, RFC 9745 `Deprecation` (when the deprecation took
// effect), RFC 8594 `Sunset` (when the deprecated part goes) and a `Link` with rel="deprecation"
// to the changelog, added to a Link the handler set (getLeads' rel="next").
import type { FastifyReply, FastifyRequest } from 'fastify'
import { httpDate, type OperationDeprecation, sfDate } from '../spec/deprecation.js'

export interface DeprecationHeaders {
  deprecation: string
  sunset?: string
  link: string
}

/**
 * The header values, computed once when the route is bound. Without an `x-deprecated-at`, the
 * deprecation is in effect since `boundAt` (when this server started with the deprecation).
 */
export function deprecationHeaders(d: OperationDeprecation, changelogUrl: string, boundAt: Date): DeprecationHeaders {
  return {
    deprecation: sfDate(d.since ?? boundAt),
    ...(d.sunset && { sunset: httpDate(d.sunset) }),
    link: `<${changelogUrl}>; rel="deprecation"; type="text/markdown"`,
  }
}

export function deprecationHook(headers: DeprecationHeaders) {
  return async function deprecation(_request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    reply.header('deprecation', headers.deprecation)
    if (headers.sunset) reply.header('sunset', headers.sunset)
    const link = reply.getHeader('link')
    reply.header('link', link === undefined ? headers.link : `${String(link)}, ${headers.link}`)
    return payload
  }
}
