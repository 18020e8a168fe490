// The 404 a browser gets: the site's 404 page (lib/page.ts: the same header, footer and style as
// every page of the site), saying what is not there and where to go, instead of the Error body
// (which every other client still gets: content negotiation on Accept, as the project pages do).
// The site is `app.site`: the spec's title until a feature names the studio (the catalogue does,
// from data/playbook.json). No script, its own CSP.
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { type Site, unknownPathPage } from '../../lib/page.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Who the site's pages say they are; a feature may name the studio (Object.assign). */
    site: Site
  }
}

/** Does the client ask for a page (a browser) rather than data? JSON wins a tie (`*` / `*`). */
export const wantsHtml = (request: FastifyRequest): boolean =>
  negotiate(request.headers.accept ?? '', ['application/json', 'text/html']) === 'text/html'

/** Only inline style: no script, no framing, no form. */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/** The site until a feature names it: the API's own name, its icon. */
export const defaultSite = (title: string): Site => ({ name: title, tagline: '', icon: '/favicon.ico' })

/** Sends the 404 page (status 404, no caching, the page's CSP). */
export function sendNotFoundPage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  request.errorCode = 'not_found'
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', CSP)
    .send(unknownPathPage(request.server.site, request.url.split('?')[0] ?? '/'))
}
