// The catalogue's public pages (outside the spec, like /docs): /projects, the index of published
// projects; /projects/{id}, a page per project (the `page_url` of the playbook's project cards)
// with the other projects of its styles and a way to enquire; /projects/enquiry.js, the website
// form's script when anonymous leads are on. An unknown id answers an HTML 404 page to a browser
// and the Error body to everything else.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { type Config, projectRoot } from '../../config.js'
import type { Site as Shell } from '../../lib/page.js'
import { AppError } from '../../plugins/errors/codes.js'
import { wantsHtml } from '../../plugins/errors/html.js'
import { type Enquiry, icon, indexPage, notFoundPage, projectPage, type Site } from './html.js'

/** The public page of a project. */
export function projectPageUrl(baseUrl: string, id: string): string {
  return `${baseUrl}/projects/${encodeURIComponent(id)}`
}

// Read from the source folder (the compiled server runs from dist/, where tsc copies no .js asset).
const enquiryScript = readFileSync(join(projectRoot, 'features', 'catalogue', 'enquiry.js'))

export function registerProjectPages(app: FastifyInstance, config: Config, site: Shell): void {
  const enquiry: Enquiry = config.leadsAllowAnonymous ? { form: true } : { form: false, contact: config.enquiryContact }
  const full: Site = { ...site, enquiry }
  const origin = new URL(config.publicBaseUrl).origin
  // The form posts JSON to this server with its own script; without the form, no script at all.
  const script = enquiry.form ? "script-src 'self'; connect-src 'self'" : "script-src 'none'"
  const csp = `default-src 'none'; img-src 'self' ${origin}; style-src 'unsafe-inline'; ${script}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`
  const html = (reply: FastifyReply, status: number, page: string) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', status === 200 ? 'public, max-age=300' : 'no-store')
      .header('content-security-policy', csp)
      .header('x-content-type-options', 'nosniff')
      .send(page)

  app.get<{ Querystring: { style?: string } }>('/projects', async (request, reply) => {
    const style = typeof request.query.style === 'string' && request.query.style.trim() !== '' ? request.query.style.trim() : null
    return html(reply, 200, indexPage(full, app.catalogue.current()?.projects ?? [], style))
  })

  app.get<{ Params: { id: string } }>('/projects/:id', async (request, reply) => {
    const projects = app.catalogue.current()?.projects ?? []
    const project = projects.find((p) => p.id === request.params.id)
    if (project) return html(reply, 200, projectPage(full, project, projects))
    if (wantsHtml(request)) return html(reply, 404, notFoundPage(full))
    throw new AppError(
      'not_found',
      'There is no published project with this id.',
      'see /projects, list_projects or /project_metadata.json for the published ids',
    )
  })

  const svg = icon(site)
  app.get('/projects/icon.svg', async (_request, reply) =>
    reply.type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(svg),
  )

  if (enquiry.form) {
    app.get('/projects/enquiry.js', async (_request, reply) =>
      reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(enquiryScript),
    )
  }
}
