// The MCP app views: single-file HTML built from ui/ into dist/ui/ (`npm run build:ui`), read once
// at start-up and served as `ui://{PUBLIC_HOST}/{name}` resources.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Config, projectRoot } from '../../config.js'
import type { ViewName } from './tool.js'

export interface View {
  name: ViewName
  uri: string
  title: string
  description: string
  html: string
}

export const viewsDir = join(projectRoot, 'dist', 'ui')

const VIEWS: Record<ViewName, { title: string; description: string }> = {
  playbook: {
    title: 'Studio playbook',
    description: "The studio's process, signature styles and projects, with a consultation request form.",
  },
  'pricing-estimator': {
    title: 'Pricing estimator',
    description: 'An interactive budget estimator: area, rooms, service level, style and city.',
  },
}

export const viewUri = (config: Pick<Config, 'publicHost'>, name: ViewName): string => `ui://${config.publicHost}/${name}`

/**
 * `_meta.ui` of every view: the images the views show are the catalogue's, served by this API
 * from `${publicBaseUrl}/images/`; the views make no network requests of their own (tools are
 * called through the host), so no connect domains.
 */
export function viewMeta(config: Pick<Config, 'publicBaseUrl'>): { csp: { resourceDomains: string[] }; prefersBorder: boolean } {
  return { csp: { resourceDomains: [new URL(config.publicBaseUrl).origin] }, prefersBorder: true }
}

/** Reads every view once; a missing build stops the start-up with what to do. */
export function loadViews(config: Config, dir: string = viewsDir): View[] {
  return (Object.keys(VIEWS) as ViewName[]).map((name) => {
    const file = join(dir, `${name}.html`)
    let html: string
    try {
      html = readFileSync(file, 'utf8')
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'is missing' : `cannot be read (${(err as Error).message})`
      throw new Error(`MCP app view ${file} ${why}: run \`npm run build:ui\` to build the views into dist/ui/ before starting the server`)
    }
    return { name, uri: viewUri(config, name), ...VIEWS[name], html }
  })
}
