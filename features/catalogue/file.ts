// The catalogue as the studio ships it (data/projects.json): read, validated against the spec's
// Project schema before any field is touched, and published into storage.
import { join } from 'node:path'
import { projectRoot } from '../../config.js'
import type { components } from '../../generated/openapi.js'
import { compileStrict } from '../../lib/ajv.js'
import type { Spec } from '../../plugins/spec/document.js'
import { readUtf8File } from '../../plugins/validation/utf8.js'
import type { CatalogueRepository } from './repository.js'

export type Project = components['schemas']['Project']

export const dataDir = join(projectRoot, 'data')
export const catalogueFile = join(dataDir, 'projects.json')

/** Relative image URLs (as shipped in data/) made absolute against the public base URL. */
export function withAbsoluteUrls(project: Project, baseUrl: string): Project {
  return { ...project, images: project.images.map((img) => ({ ...img, url: new URL(img.url, `${baseUrl}/`).href })) }
}

/**
 * Reads a catalogue file and validates every record against the spec's Project schema (image
 * URLs may be relative to the server); throws naming the project and the field.
 */
export function readCatalogueFile(spec: Spec, file: string = catalogueFile): Project[] {
  const data = JSON.parse(readUtf8File(file)) as unknown
  if (!Array.isArray(data)) throw new Error(`${file}: expected a JSON array of projects`)
  const validate = compileStrict(spec.schema('Project'))
  const ids = new Set<string>()
  data.forEach((p: unknown, i) => {
    const id = (p as { id?: unknown } | null)?.id
    const name = `project #${i + 1} (${typeof id === 'string' ? id : '?'})`
    // Validate the record as served: relative image URLs resolved first, once they are known to be there.
    const images = (p as { images?: unknown } | null)?.images
    const served =
      Array.isArray(images) && images.every((img) => typeof (img as { url?: unknown } | null)?.url === 'string')
        ? withAbsoluteUrls(p as Project, 'http://localhost')
        : p
    if (!validate(served)) {
      const e = validate.errors?.[0]
      const field = e?.keyword === 'required' ? `${e.instancePath}/${String(e.params.missingProperty)}` : e?.instancePath || '(record)'
      const what = e?.keyword === 'required' ? 'is missing' : (e?.message ?? 'is invalid')
      throw new Error(`${file}: ${name} ${field} ${what}`)
    }
    if (ids.has(id as string)) throw new Error(`${file}: duplicate project id ${id}`)
    ids.add(id as string)
  })
  return data as Project[]
}

export async function publishCatalogue(repository: CatalogueRepository, projects: Project[]): Promise<string | undefined> {
  return repository.publish(projects, new Date().toISOString())
}
