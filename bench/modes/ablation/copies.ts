// Temporary copies of the repository, one per build the ablation measures: the sources as they are
// now (`git stash create`: the working tree's changes to tracked files, else HEAD), written out with
// git archive, a patch applied to all but the control copy, node_modules linked from this one, and
// the server bundled there as `npm start` bundles it (the spec, docs assets and views copied from
// this tree's dist/: no patch touches them).
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, realpathSync, symlinkSync } from 'node:fs'
import { join, relative } from 'node:path'
import { log } from '../../lib/log.js'
import { benchDir, root } from '../../lib/paths.js'

/** A copy of the repository, its bundle (once built). */
export interface Copy {
  /** control, or the internal's name. */
  name: string
  dir: string
  /** The patch applied (none for the control copy). */
  patch: string | undefined
  bundle: string
}

/** The commit whose tree the copies hold: the working tree's tracked files as they are. */
export function sourceCommit(): string {
  const stash = execFileSync('git', ['stash', 'create'], { cwd: root, encoding: 'utf8' }).trim()
  const untracked = execFileSync('git', ['ls-files', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f && f !== 'node_modules')
    .join('\n')
  if (untracked) log(`ablation: untracked files are not in the copies (commit or add them to measure them):\n${untracked}`)
  return stash || execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
}

/** The path of an internal's patch. */
export const patchFile = (name: string): string => join(benchDir, 'ablation', `${name}.patch`)

/**
 * Writes the tree of `commit` to `dir`, applies the patch (git apply: it either applies whole or
 * not at all) and links node_modules. A patch that no longer applies throws, naming it.
 */
export function makeCopy(name: string, commit: string, dir: string, patch: string | undefined): Copy {
  mkdirSync(dir, { recursive: true })
  const archive = spawnSync('sh', ['-c', `git archive --format=tar ${commit} | tar -x -C "${dir}"`], { cwd: root, encoding: 'utf8' })
  if (archive.status !== 0) throw new Error(`ablation: git archive of ${commit} into ${dir} failed: ${archive.stderr}`)
  if (patch) {
    if (!existsSync(patch)) throw new Error(`ablation: ${relative(root, patch)} is missing`)
    const applied = spawnSync('git', ['apply', '--whitespace=nowarn', patch], { cwd: dir, encoding: 'utf8' })
    if (applied.status !== 0) {
      throw new Error(
        `ablation: ${relative(root, patch)} no longer applies to the sources (${name}); make it again from a real edit (bench/README.md, "The ablation"):\n${applied.stderr.trim()}`,
      )
    }
  }
  symlinkSync(realpathSync(join(root, 'node_modules')), join(dir, 'node_modules'))
  return { name, dir, patch, bundle: join(dir, 'dist', 'server.bundle.js') }
}

/** What the server reads from dist/ beside its bundle, built by this tree's `npm run build`. */
const BUILT = [join('spec', 'openapi.json'), 'docs-static', 'ui']

/** Bundles the copy's server as `npm start` does (its own scripts/bundle.mjs, its START_ENTRIES). */
export function bundleCopy(copy: Copy): void {
  for (const part of BUILT) {
    const from = join(root, 'dist', part)
    if (!existsSync(from)) throw new Error(`ablation: dist/${part} is missing: run \`npm run build\` first (or without --skip-build)`)
    cpSync(from, join(copy.dir, 'dist', part), { recursive: true })
  }
  const bundled = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', "const m = await import('./scripts/bundle.mjs'); await m.bundle(m.START_ENTRIES)"],
    { cwd: copy.dir, encoding: 'utf8' },
  )
  if (bundled.status !== 0 || !existsSync(copy.bundle)) {
    throw new Error(`ablation: bundling the ${copy.name} copy failed:\n${`${bundled.stdout}${bundled.stderr}`.trim()}`)
  }
}
