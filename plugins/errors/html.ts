// The 404 a browser gets: a page saying what is not there and where to go, instead of the Error
// body (which every other client still gets: content negotiation on Accept, as the project pages
// do). Self-contained: its style inline, no script, its own CSP.
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { escapeHtml } from '../../lib/html.js'
import { visible } from '../../lib/text.js'

/** Does the client ask for a page (a browser) rather than data? JSON wins a tie (`*` / `*`). */
export const wantsHtml = (request: FastifyRequest): boolean =>
  negotiate(request.headers.accept ?? '', ['application/json', 'text/html']) === 'text/html'

/** Only inline style: no script, no framing, no form. */
const CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const STYLE =
  ':root{--ink:#2f2b28;--paper:#faf8f5;--muted:#6b625a;--accent:#8e5f3c;--line:#e4dccf}' +
  'body{margin:0;font:16px/1.6 ui-sans-serif,system-ui,sans-serif;color:var(--ink);background:var(--paper)}' +
  'main{max-width:40rem;margin:0 auto;padding:4rem 1.25rem}' +
  '.code{letter-spacing:.12em;text-transform:uppercase;font-size:.85rem;color:var(--muted);font-weight:600}' +
  'h1{font-size:2rem;line-height:1.2;margin:.25rem 0 .75rem}' +
  'p{margin:0 0 1rem}code{background:#fff;border:1px solid var(--line);border-radius:4px;padding:0 .3rem;word-break:break-all}' +
  'a{color:var(--accent)}ul{padding-left:1.2rem}'

/** The 404 page: the path (escaped, shortened), and the ways in. */
export function notFoundPage(title: string, path: string): string {
  // Shortened, and nothing in it hidden or reordering the page (lib/text.ts: shown as \uXXXX).
  const shown = visible(path.length > 200 ? `${path.slice(0, 197)}...` : path)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not found · ${escapeHtml(title)}</title>
<link rel="icon" href="/favicon.ico">
<style>${STYLE}</style>
</head>
<body>
<main>
<p class="code">404 · not found</p>
<h1>There is nothing here</h1>
<p>Nothing is published at <code>${escapeHtml(shown)}</code>.</p>
<ul>
<li><a href="/docs">The API reference</a>: every operation, and a way to try them</li>
<li><a href="/projects">The studio's projects</a></li>
</ul>
</main>
</body>
</html>
`
}

/** Sends the 404 page (status 404, no caching, the page's CSP). */
export function sendNotFoundPage(request: FastifyRequest, reply: FastifyReply, title: string): FastifyReply {
  request.errorCode = 'not_found'
  return reply
    .code(404)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', CSP)
    .send(notFoundPage(title, request.url.split('?')[0] ?? '/'))
}
