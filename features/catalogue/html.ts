// The catalogue's public pages as HTML: the index of published projects, a page per project (with
// the other projects of its styles and a way to enquire), and the 404 page. Plain templates; every
// value from the catalogue is escaped.
import { escapeHtml } from '../../lib/html.js'
import type { Project } from './file.js'
import { matchKey } from './names.js'
import { placeOf } from './places.js'

const e = escapeHtml

/** How a visitor enquires: the website form (anonymous leads on), or the studio's contact text. */
export type Enquiry = { form: true } | { form: false; contact: string }

export interface Site {
  studio: string
  tagline: string
  enquiry: Enquiry
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

function layout(site: Site, title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · ${e(site.studio)}</title>
<link rel="icon" href="/projects/icon.svg" type="image/svg+xml">
<style>${STYLE}</style>
</head>
<body>
<header><div><a class="studio" href="/projects">${e(site.studio)}</a><nav><a href="/projects">All projects</a></nav></div></header>
<main>
${body}
</main>
<footer><div>${e(site.studio)} · ${e(site.tagline)} · <a href="/docs">API</a></div></footer>
</body>
</html>
`
}

const inStyle = (p: Project, style: string): boolean => p.styles.some((s) => matchKey(s) === matchKey(style))
const styleLink = (style: string): string => `/projects?style=${encodeURIComponent(style)}`

function card(p: Project): string {
  const img = p.images[0]
  return `<li class="card"><a href="/projects/${encodeURIComponent(p.id)}">${img ? `<img src="${e(img.url)}" alt="${e(img.alt)}" loading="lazy">` : ''}<div><strong>${e(p.title)}</strong><span>${e(placeOf(p))} · ${p.year}</span><span>${e(p.styles.join(' · '))}</span></div></a></li>`
}

/** /projects: every published project, newest first, optionally in one style. */
export function indexPage(site: Site, projects: readonly Project[], style: string | null): string {
  const styles = [...new Set(projects.flatMap((p) => p.styles))].sort((a, b) => a.localeCompare(b))
  const shown = projects
    .filter((p) => style === null || inStyle(p, style))
    .sort((a, b) => b.year - a.year || a.title.localeCompare(b.title))
  const heading = style === null ? 'Projects' : `${style} projects`
  const chips = styles
    .map(
      (s) =>
        `<li>${style !== null && matchKey(s) === matchKey(style) ? `<strong>${e(s)}</strong>` : `<a href="${e(styleLink(s))}">${e(s)}</a>`}</li>`,
    )
    .join('')
  const body = `<h1>${e(heading)}</h1>
<p class="meta">${shown.length} published project${shown.length === 1 ? '' : 's'}${style === null ? '' : ` · <a href="/projects">all styles</a>`}</p>
<ul class="chips" aria-label="Styles">${chips}</ul>
<ul class="grid">${shown.map(card).join('')}</ul>${shown.length === 0 ? '<p>No published project in this style yet.</p>' : ''}`
  return layout(site, heading, body)
}

function enquirySection(site: Site, project: Project): string {
  if (!site.enquiry.form) {
    return `<section class="enquire" aria-labelledby="enquire"><h2 id="enquire">A project like this?</h2><p>${e(site.enquiry.contact)}</p></section>`
  }
  return `<section class="enquire" aria-labelledby="enquire"><h2 id="enquire">A project like this? Ask for a consultation</h2>
<form id="enquiry" data-project="${e(project.title)}" novalidate>
<label>Full name<input name="name" autocomplete="name" required maxlength="200"></label>
<label>Email<input name="email" type="email" autocomplete="email" required maxlength="254"></label>
<label>Phone<input name="phone" type="tel" autocomplete="tel" required maxlength="40"></label>
<label class="consent"><input name="consent" type="checkbox" required><span>I agree that ${e(site.studio)} stores these details to contact me about a consultation.</span></label>
<button type="submit">Request a consultation</button>
<p id="enquiry-status" role="status"></p><p id="enquiry-error" role="alert"></p>
</form>
<noscript><p>This form needs JavaScript.</p></noscript>
<script src="/projects/enquiry.js" defer></script></section>`
}

/** /projects/{id}: the project, the other projects of its styles, and a way to enquire. */
export function projectPage(site: Site, project: Project, all: readonly Project[]): string {
  const images = project.images.map(
    (img) => `<figure><img src="${e(img.url)}" alt="${e(img.alt)}"><figcaption>${e(img.alt)}</figcaption></figure>`,
  )
  const related = project.styles
    .map((style) => {
      const others = all.filter((p) => p.id !== project.id && inStyle(p, style)).slice(0, 6)
      return others.length === 0
        ? ''
        : `<h2>More ${e(style)}</h2><ul class="grid">${others.map(card).join('')}</ul><p><a href="${e(styleLink(style))}">All ${e(style)} projects</a></p>`
    })
    .join('\n')
  const body = `<p class="crumbs"><a href="/projects">Projects</a> / ${e(project.title)}</p>
<h1>${e(project.title)}</h1>
<p class="meta">${e(placeOf(project))} · ${project.year} · ${project.area_sqm} m² · designed by ${e(project.designer)}</p>
${images.join('\n')}
<p>${e(project.summary)}</p>
<h2>Styles</h2>
<ul class="chips">${project.styles.map((s) => `<li><a href="${e(styleLink(s))}">${e(s)}</a></li>`).join('')}</ul>
${project.tags.length > 0 ? `<h2>Tags</h2>\n<ul class="chips">${project.tags.map((t) => `<li>${e(t)}</li>`).join('')}</ul>` : ''}
${enquirySection(site, project)}
${related}`
  return layout(site, project.title, body)
}

/** The pages' icon: the studio's initial on its accent colour. */
export function icon(site: Pick<Site, 'studio'>): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#8e5f3c"/><text x="16" y="22" text-anchor="middle" font-family="system-ui,sans-serif" font-size="17" fill="#fff">${e(site.studio.slice(0, 1).toUpperCase())}</text></svg>`
}

/** The 404 page for a browser asking for a project that is not published. */
export function notFoundPage(site: Site): string {
  return layout(
    site,
    'Project not found',
    '<h1>This project is not published</h1><p class="meta">It may have been renamed or withdrawn from the catalogue.</p><p><a href="/projects">See all published projects</a></p>',
  )
}
