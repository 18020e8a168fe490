// The catalogue's public pages as HTML: the index of published projects, a page per project (with
// the other projects of its styles and a way to enquire), and the 404 page, in the site's one page
// shell (lib/page.ts: its style, header and footer). Plain templates; every value from the
// catalogue is escaped.
import { escapeHtml } from '../../lib/html.js'
import { notFoundPage as missingPage, page, type Site as Shell } from '../../lib/page.js'
import type { Project } from './file.js'
import { matchKey } from './names.js'
import { placeOf } from './places.js'

const e = escapeHtml

/** How a visitor enquires: the website form (anonymous leads on), or the studio's contact text. */
export type Enquiry = { form: true } | { form: false; contact: string }

/** The site (its name, tagline and icon) and how a visitor enquires. */
export interface Site extends Shell {
  enquiry: Enquiry
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
  return page(site, heading, body)
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
<label class="consent"><input name="consent" type="checkbox" required><span>I agree that ${e(site.name)} stores these details to contact me about a consultation.</span></label>
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
  return page(site, project.title, body)
}

/** The pages' icon: the studio's initial on its accent colour. */
export function icon(site: Pick<Site, 'name'>): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#8e5f3c"/><text x="16" y="22" text-anchor="middle" font-family="system-ui,sans-serif" font-size="17" fill="#fff">${e(site.name.slice(0, 1).toUpperCase())}</text></svg>`
}

/** The 404 page for a browser asking for a project that is not published. */
export function notFoundPage(site: Site): string {
  return missingPage(site, {
    title: 'Project not found',
    heading: 'This project is not published',
    detail: 'It may have been renamed or withdrawn from the catalogue. <a href="/projects">See all published projects</a>.',
  })
}
