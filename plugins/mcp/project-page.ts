// GET /projects/:id: a small read-only HTML page per published project, the `page_url` of the
// playbook's project cards (outside the spec, like /docs). Unknown ids answer 404 with the Error body.
import type { FastifyInstance } from 'fastify'
import type { Config } from '../../config.js'
import { countryName } from '../../handlers/tools/playbook.js'
import type { Project } from '../catalogue.js'
import { AppError } from '../errors/codes.js'

const escapeHtml = (s: string): string =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;').replaceAll("'", '&#39;')

export function projectPage(project: Project, studioName: string): string {
  const e = escapeHtml
  const place = [project.location.city, project.location.region, countryName(project.location.country)].filter(Boolean).join(', ')
  const images = project.images.map(
    (img) => `<figure><img src="${e(img.url)}" alt="${e(img.alt)}"><figcaption>${e(img.alt)}</figcaption></figure>`,
  )
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(project.title)} · ${e(studioName)}</title>
<style>
body{margin:0;font:16px/1.6 system-ui,sans-serif;color:#2f2b28;background:#faf8f5}
main{max-width:52rem;margin:0 auto;padding:2rem 1.25rem 4rem}
.studio{letter-spacing:.08em;text-transform:uppercase;font-size:.8rem;color:#8e7d6b;margin:0}
h1{font-size:2rem;line-height:1.2;margin:.25rem 0 .5rem}
.meta{color:#6b625a;margin:0 0 1.5rem}
figure{margin:0 0 1.5rem}img{width:100%;height:auto;border-radius:6px;background:#e8e2d8}
figcaption{font-size:.85rem;color:#6b625a}
ul{display:flex;flex-wrap:wrap;gap:.5rem;list-style:none;padding:0}li{border:1px solid #d9cebf;border-radius:999px;padding:0 .75rem;font-size:.85rem}
</style>
</head>
<body>
<main>
<p class="studio">${e(studioName)}</p>
<h1>${e(project.title)}</h1>
<p class="meta">${e(place)} · ${project.year} · ${project.area_sqm} m² · designed by ${e(project.designer)}</p>
${images.join('\n')}
<p>${e(project.summary)}</p>
<h2>Styles</h2>
<ul>${project.styles.map((s) => `<li>${e(s)}</li>`).join('')}</ul>
${project.tags.length > 0 ? `<h2>Tags</h2>\n<ul>${project.tags.map((t) => `<li>${e(t)}</li>`).join('')}</ul>` : ''}
</main>
</body>
</html>
`
}

export function registerProjectPages(app: FastifyInstance, config: Config, studioName: string): void {
  const origin = new URL(config.publicBaseUrl).origin
  const csp = `default-src 'none'; img-src 'self' ${origin}; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
  app.get<{ Params: { id: string } }>('/projects/:id', async (request, reply) => {
    const project = app.catalogue.current()?.projects.find((p) => p.id === request.params.id)
    if (!project) {
      throw new AppError(
        'not_found',
        'There is no published project with this id.',
        'see list_projects or /project_metadata.json for the published ids',
      )
    }
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .send(projectPage(project, studioName))
  })
}
