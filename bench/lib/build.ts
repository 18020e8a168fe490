// The project's own build before a run, so the API starts from dist/ exactly as `npm start` would.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { relative } from 'node:path'
import { log } from './log.js'
import { root } from './paths.js'
import type { Options } from './types.js'

/** `npm run build` (tsc, the server bundle, spec, UI views into dist/) unless --skip-build or --server. */
export function build(options: Options): void {
  const { serverJs } = options
  if (!options.skipBuild) {
    log('building: npm run build (tsc and the server bundle, spec, UI views into dist/)')
    const build = spawnSync('npm', ['run', '-s', 'build'], { cwd: root, encoding: 'utf8' })
    if (build.status !== 0) {
      const out = `${build.stdout}${build.stderr}`.trim().split('\n').slice(0, 20).join('\n')
      if (!existsSync(serverJs)) throw new Error(`the build failed and there is no ${relative(root, serverJs)}:\n${out}`)
      log(`WARNING: the build reported errors (tsc still emits JS); benchmarking dist/ as it is:\n${out}`)
    }
  }
  if (!existsSync(serverJs)) throw new Error(`${relative(root, serverJs)} is missing: run \`npm run build\` first`)
}
