// The published catalogue, served from memory: the JSON bytes and their ETag are prepared once
// per catalogue version, and a timer picks up a version published by the CLI or another instance.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fastifyStatic from '@fastify/static'
import fp from 'fastify-plugin'
import { type Config, projectRoot } from '../config.js'
import type { components } from '../generated/openapi.js'
import { componentSchema, loadSpec } from './spec.js'
import type { Store } from './store/open.js'
import { compileBodySchema } from './validation.js'

export type Project = components['schemas']['Project']

export interface CatalogueView {
  etag: string
  /** The 200 body, serialized and UTF-8 encoded once (a string would be re-encoded per response). */
  body: Buffer
  projects: Project[]
}

export interface Catalogue {
  current(): CatalogueView | undefined
  /** Re-reads storage now (after a publish in this process). */
  refresh(): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    catalogue: Catalogue
  }
}

export const dataDir = join(projectRoot, 'data')
export const catalogueFile = join(dataDir, 'projects.json')

/** Relative image URLs (as shipped in data/) made absolute against the public base URL. */
export function withAbsoluteUrls(project: Project, baseUrl: string): Project {
  return { ...project, images: project.images.map((img) => ({ ...img, url: new URL(img.url, `${baseUrl}/`).href })) }
}

/** Reads and validates a catalogue file against the spec's Project schema; throws naming the record. */
export function readCatalogueFile(file: string = catalogueFile): Project[] {
  const data = JSON.parse(readFileSync(file, 'utf8')) as unknown
  if (!Array.isArray(data)) throw new Error(`${file}: expected a JSON array of projects`)
  const validate = compileBodySchema(componentSchema(loadSpec(), 'Project'))
  const ids = new Set<string>()
  data.forEach((p, i) => {
    const absolute = withAbsoluteUrls(p as Project, 'http://localhost')
    if (!validate(absolute)) {
      const e = validate.errors?.[0]
      throw new Error(
        `${file}: project #${i + 1} (${(p as { id?: string }).id ?? '?'}) ${e?.instancePath ?? ''} ${e?.message ?? 'is invalid'}`,
      )
    }
    if (ids.has((p as Project).id)) throw new Error(`${file}: duplicate project id ${(p as Project).id}`)
    ids.add((p as Project).id)
  })
  return data as Project[]
}

export async function publishCatalogue(store: Store, projects: Project[]): Promise<string | undefined> {
  return store.catalogue.publish(projects, new Date().toISOString())
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const store = app.store
    let view: CatalogueView | undefined

    if (config.seedCatalogue && (await store.catalogue.currentEtag()) === undefined) {
      const etag = await publishCatalogue(store, readCatalogueFile())
      app.log.info({ etag, file: catalogueFile }, 'catalogue imported on first start')
    }

    async function load(): Promise<void> {
      const published = await store.catalogue.current()
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
        const etag = await store.catalogue.currentEtag()
        if ((etag ? `"${etag}"` : undefined) !== view?.etag) await load()
      } catch (err) {
        app.log.warn({ err: { message: (err as Error).message } }, 'catalogue refresh failed; serving the version in memory')
      }
    }, config.catalogueRefreshSeconds * 1000)
    timer.unref()
    app.addHook('onClose', async () => clearInterval(timer))

    app.decorate('catalogue', { current: () => view, refresh: load })

    // The catalogue's images: static files shipped in data/images.
    await app.register(fastifyStatic, { root: join(dataDir, 'images'), prefix: '/images/', decorateReply: false, maxAge: '1d' })
  },
  { name: 'catalogue', fastify: '5.x', dependencies: ['store'] },
)
