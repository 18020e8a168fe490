// Reads the spec from disk. The only reader: the app (app.ts) and the command-line tools
// (scripts/) call it once and hand the document to everything that needs it.
import { readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { projectRoot } from '../../config.js'
import type { OpenApiDocument } from './document.js'

export const specPath = join(projectRoot, 'spec', 'openapi.yaml')
/** The spec as JSON, written by `npm run build` and `npm start` (scripts/build-spec.mjs) for a faster start. */
export const builtSpecPath = join(projectRoot, 'dist', 'spec', 'openapi.json')

const mtime = (path: string): number => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return -1
  }
}

/**
 * The spec as written. The built JSON copy is used only when it is at least as new as the YAML,
 * so an edited spec is never served stale. Each call reads the file: call it once per app.
 */
export function loadSpec(): OpenApiDocument {
  const built = mtime(builtSpecPath)
  return (
    built >= mtime(specPath) ? JSON.parse(readFileSync(builtSpecPath, 'utf8')) : parse(readFileSync(specPath, 'utf8'))
  ) as OpenApiDocument
}
