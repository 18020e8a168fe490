/**
 * Content-Security-Policy for MCP App views, per SEP-1865 (2026-01-26):
 *
 *  - No `_meta.ui.csp` declared → the spec's restrictive default:
 *      default-src 'none'; script-src 'self' 'unsafe-inline';
 *      style-src 'self' 'unsafe-inline'; img-src 'self' data:;
 *      media-src 'self' data:; connect-src 'none';
 *  - resourceDomains → img-src, script-src, style-src, font-src, media-src
 *  - connectDomains  → connect-src
 *  - frameDomains    → frame-src (else 'none')
 *  - baseUriDomains  → base-uri (else 'self')
 *  - object-src 'none' always.
 *
 * Used by the browser host (host.ts) to inject a <meta http-equiv> policy into
 * the view document before loading it in the sandboxed iframe. Pure string
 * code: usable from Node too.
 */
import type { McpUiResourceCsp } from '@modelcontextprotocol/ext-apps'

/** Drop entries that could smuggle extra sources or directives into the policy. */
function sanitize(domains: readonly string[] | undefined): string[] {
  if (!Array.isArray(domains)) return []
  return domains.filter((d) => typeof d === 'string' && d.length > 0 && !/[;,'"\s]/.test(d))
}

export function buildViewCsp(csp?: McpUiResourceCsp): string {
  const res = sanitize(csp?.resourceDomains)
  const connect = sanitize(csp?.connectDomains)
  const frames = sanitize(csp?.frameDomains)
  const bases = sanitize(csp?.baseUriDomains)
  const list = (...parts: string[]) => parts.filter(Boolean).join(' ')

  const directives = [
    "default-src 'none'",
    list("script-src 'self' 'unsafe-inline'", ...res),
    list("style-src 'self' 'unsafe-inline'", ...res),
    list("img-src 'self' data:", ...res),
    list("media-src 'self' data:", ...res),
    res.length ? list("font-src 'self'", ...res) : '',
    connect.length ? list("connect-src 'self'", ...connect) : "connect-src 'none'",
    frames.length ? list('frame-src', ...frames) : "frame-src 'none'",
    bases.length ? list('base-uri', ...bases) : "base-uri 'self'",
    "object-src 'none'",
  ]
  return directives.filter(Boolean).join('; ')
}

function escapeAttr(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')
}

/**
 * Inserts `<meta http-equiv="Content-Security-Policy">` as the first element
 * of <head>, so it governs every script/style/img that follows.
 */
export function injectCsp(html: string, policy: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${escapeAttr(policy)}">`
  const head = /<head(\s[^>]*)?>/i.exec(html)
  if (head) {
    const at = head.index + head[0].length
    return html.slice(0, at) + meta + html.slice(at)
  }
  const htmlTag = /<html(\s[^>]*)?>/i.exec(html)
  if (htmlTag) {
    const at = htmlTag.index + htmlTag[0].length
    return `${html.slice(0, at)}<head>${meta}</head>${html.slice(at)}`
  }
  return `<!doctype html><html><head>${meta}</head><body>${html}</body></html>`
}
