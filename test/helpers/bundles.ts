// The built programs the system tests run as processes: the server and the operator's CLI as
// `npm run build:server` bundles them (scripts/bundle.mjs), the way `npm start` runs the server.
// A bundle starts in a fraction of a second; the same program through tsx compiles a thousand
// files first. `npm test` and `node test/tiers.mjs` build them before the tests run; after an edit,
// a single test file needs `npm run build:server` first, or it runs the code of the last build.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '../../config.js'

function bundle(name: string): string {
  const file = join(projectRoot, 'dist', `${name}.js`)
  if (!existsSync(file)) throw new Error(`${file} is missing: npm run build:server builds it (npm test does)`)
  return file
}

/** dist/server.bundle.js: the server (server.ts). */
export const serverBundle = (): string => bundle('server.bundle')

/** dist/studio.bundle.js: the operator's CLI (scripts/studio.ts), `studio <area> <command>`. */
export const cliBundle = (): string => bundle('studio.bundle')

/** dist/config.bundle.js: the configuration module alone (config.ts). */
export const configBundle = (): string => bundle('config.bundle')
