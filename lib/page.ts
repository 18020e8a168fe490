// The site's one page shell: every HTML page the server writes (the catalogue's pages, the 404 of
// an unknown path or of a project that is not published, the staff sign-in pages) has the same
// style, the same header (the studio's name, a way to the projects) and the same footer (name,
// tagline, the API reference). A kind of page may add to the head (its own style rules, a script).
// Plain templates: every value is escaped here, the body is HTML the caller has escaped.
import { escapeHtml as e } from './html.js'
import { visible } from './text.js'

/** Who the site is: the studio's name and tagline (data/playbook.json), and its icon. */
export interface Site {
  name: string
  /** Empty: the footer shows the name alone. */
  tagline: string
  /** The icon's path on this server. */
  icon: string
}

export const STYLE = `
:root{--ink:#2f2b28;--paper:#faf8f5;--muted:#6b625a;--accent:#8e5f3c;--line:#e4dccf}
*{box-sizing:border-box}
body{margin:0;font:16px/1.6 ui-sans-serif,system-ui,sans-serif;color:var(--ink);background:var(--paper)}
a{color:var(--accent)}
header{border-bottom:1px solid var(--line);background:#fff}
header div,main,footer div{max-width:60rem;margin:0 auto;padding:0 1.25rem}
header div{display:flex;align-items:baseline;gap:1rem;padding-top:1rem;padding-bottom:1rem}
.studio{letter-spacing:.12em;text-transform:uppercase;font-size:.85rem;color:var(--ink);text-decoration:none;font-weight:600}
header nav a{font-size:.9rem;margin-left:auto}
main{padding-top:2rem;padding-bottom:3rem}
h1{font-size:2rem;line-height:1.2;margin:.25rem 0 .5rem}
h2{font-size:1.2rem;margin:2rem 0 .75rem}
.meta,.crumbs{color:var(--muted);margin:0 0 1.25rem}
.crumbs{font-size:.9rem;margin-bottom:.5rem}
.status{letter-spacing:.12em;text-transform:uppercase;font-size:.85rem;color:var(--muted);font-weight:600;margin:0}
code{background:#fff;border:1px solid var(--line);border-radius:4px;padding:0 .3rem;word-break:break-all}
figure{margin:0 0 1.5rem}img{width:100%;height:auto;border-radius:6px;background:#e8e2d8;display:block}
figcaption{font-size:.85rem;color:var(--muted);margin-top:.35rem}
ul.chips{display:flex;flex-wrap:wrap;gap:.5rem;list-style:none;padding:0;margin:0}
ul.chips li{border:1px solid var(--line);border-radius:999px;padding:0 .75rem;font-size:.85rem;background:#fff}
ul.chips a{text-decoration:none}
.chips+.grid{margin-top:1.5rem}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(16rem,1fr));gap:1.25rem;list-style:none;padding:0;margin:0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;overflow:hidden}
.card a{display:block;text-decoration:none;color:inherit}
.card img{border-radius:0;aspect-ratio:4/3;object-fit:cover}
.card div{padding:.75rem 1rem 1rem}
.card strong{display:block;font-size:1.02rem}
.card span{display:block;color:var(--muted);font-size:.88rem}
.enquire{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1.25rem 1.5rem;margin-top:2.5rem}
.enquire h2{margin-top:0}
form{display:grid;gap:.75rem;max-width:32rem}
label{display:grid;gap:.25rem;font-size:.92rem}
input,textarea{font:inherit;padding:.5rem .6rem;border:1px solid #cfc4b4;border-radius:6px;background:#fff;color:var(--ink)}
label.consent{display:flex;gap:.5rem;align-items:flex-start}
label.consent input{margin-top:.3rem}
button{font:inherit;font-weight:600;background:var(--accent);color:#fff;border:0;border-radius:6px;padding:.6rem 1.1rem;justify-self:start;cursor:pointer}
button[disabled]{opacity:.6;cursor:progress}
[role=status],[role=alert]{margin:.25rem 0 0}
[role=alert]{color:#9b2c1f}
footer{border-top:1px solid var(--line);color:var(--muted);font-size:.85rem}
footer div{padding-top:1rem;padding-bottom:1.5rem}
`

/**
 * A whole page: `body` (HTML, escaped by the caller) between the site's header and footer; `head`
 * (HTML the caller wrote: style additions, a script tag) after the style, when given.
 */
export function page(site: Site, title: string, body: string, head?: string): string {
  const footer = [site.name, site.tagline].filter((s) => s !== '').map(e)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · ${e(site.name)}</title>
<link rel="icon" href="${e(site.icon)}">
<style>${STYLE}</style>
${head ? `${head}\n` : ''}</head>
<body>
<header><div><a class="studio" href="/projects">${e(site.name)}</a><nav><a href="/projects">All projects</a></nav></div></header>
<main>
${body}
</main>
<footer><div>${footer.join(' · ')} · <a href="/docs">API</a></div></footer>
</body>
</html>
`
}

/** What a 404 page says: its heading and a line under it (HTML, escaped by the caller). */
export interface Missing {
  title: string
  heading: string
  detail: string
}

/** The site's 404 page: what is missing, and the ways in. */
export function notFoundPage(site: Site, missing: Missing): string {
  return page(
    site,
    missing.title,
    `<p class="status">404 · not found</p>
<h1>${e(missing.heading)}</h1>
<p class="meta">${missing.detail}</p>
<ul>
<li><a href="/projects">The studio's projects</a></li>
<li><a href="/docs">The API reference</a>: every operation, and a way to try them</li>
</ul>`,
  )
}

/** The 404 page of a path nothing answers: the path shown escaped, shortened, nothing in it hidden. */
export function unknownPathPage(site: Site, path: string): string {
  // Shortened, and nothing in it hidden or reordering the page (lib/text.ts: shown as \uXXXX).
  const shown = visible(path.length > 200 ? `${path.slice(0, 197)}...` : path)
  return notFoundPage(site, {
    title: 'Not found',
    heading: 'There is nothing here',
    detail: `Nothing is published at <code>${e(shown)}</code>.`,
  })
}
