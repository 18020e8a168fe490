// The catalogue feature: the published projects served from memory (the JSON bytes and their
// ETag are prepared once per catalogue version, and a timer picks up a version published by the
// CLI or another instance), the first-start import of data/projects.json, the catalogue's images
// and its public project pages.
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { hasContactDetails } from './contact.js'
import { catalogueFile, dataDir, type Project, readCatalogueFile, withAbsoluteUrls } from './file.js'
import { registerProjectPages } from './pages.js'
import { CatalogueRepository } from './repository.js'

export interface CatalogueView {
  etag: string
  /** The 200 body, serialized and UTF-8 encoded once (a string would be re-encoded per response). */
  body: Buffer
  projects: Project[]
}

export interface Catalogue {
  current(): CatalogueView | undefined
  /** Re-reads storage now (after a publish elsewhere). */
  refresh(): Promise<void>
  /** Publishes these projects (an empty list unpublishes) and serves them; returns the new etag. */
  publish(projects: Project[]): Promise<string | undefined>
  /** The published version's etag in storage, without reading the projects. */
  publishedEtag(): Promise<string | undefined>
}

declare module 'fastify' {
  interface FastifyInstance {
    catalogue: Catalogue
  }
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const repository = new CatalogueRepository(app.store.db, app.store.dialect)
    let view: CatalogueView | undefined

    if (config.seedCatalogue && (await repository.currentEtag()) === undefined) {
      const etag = await repository.publish(readCatalogueFile(app.spec), new Date().toISOString())
      app.log.info({ etag, file: catalogueFile }, 'catalogue imported on first start')
    }

    async function load(): Promise<void> {
      const published = await repository.current()
      if (!published) {
        view = undefined
        return
      }
      const projects = (published.projects as Project[]).map((p) => withAbsoluteUrls(p, config.publicBaseUrl))
      view = { etag: `"${published.etag}"`, body: Buffer.from(JSON.stringify(projects)), projects }
    }
    await load()

    const timer = setInterval(async () => {
      try {
        const etag = await repository.currentEtag()
        if ((etag ? `"${etag}"` : undefined) !== view?.etag) await load()
      } catch (err) {
        app.log.warn({ err: { message: (err as Error).message } }, 'catalogue refresh failed; serving the version in memory')
      }
    }, config.catalogueRefreshSeconds * 1000)
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))

    app.decorate('catalogue', {
      current: () => view,
      refresh: load,
      async publish(projects) {
        const etag = await repository.publish(projects, new Date().toISOString())
        await load()
        return etag
      },
      publishedEtag: () => repository.currentEtag(),
    } satisfies Catalogue)

    // The catalogue's images: static files shipped in data/images.
    // No byte ranges: the images are small, and an unsatisfiable range would be one more error.
    await app.register(fastifyStatic, {
      root: join(dataDir, 'images'),
      prefix: '/images/',
      decorateReply: false,
      maxAge: '1d',
      acceptRanges: false,
    })
    if (!config.leadsAllowAnonymous && !hasContactDetails(config.enquiryContact)) {
      app.log.warn(
        { variable: 'ENQUIRY_CONTACT' },
        'ENQUIRY_CONTACT gives no email, phone number or address: the project pages ask visitors to get in touch without saying how; set it, e.g. ENQUIRY_CONTACT="Write to hello@your-studio.example or call +39 02 0000 0000"',
      )
    }
    // The studio names the site: its pages and the server's 404 pages (plugins/errors reads app.site).
    Object.assign(app.site, { name: app.playbook.studio.name, tagline: app.playbook.studio.tagline, icon: '/projects/icon.svg' })
    registerProjectPages(app, config, app.site)
  },
  { name: 'catalogue', fastify: '5.x', dependencies: ['spec', 'store', 'playbook', 'errors'] },
)

export { catalogueFile, type Project, readCatalogueFile } from './file.js'
