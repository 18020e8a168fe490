// Where a path really is, links resolved, so that "is this inside the data folder?" is asked of
// the places a write lands and not of how a path is spelt: `x/../`, `/.`, `//`, a trailing slash, a
// symbolic link anywhere on the way (the folder itself, a parent, a dangling link that a mkdir
// would follow). A path that does not exist yet is its nearest existing ancestor's real path with
// the rest appended, as a later mkdir -p would make it.
import { lstatSync, readlinkSync, realpathSync } from 'node:fs'
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path'

/** Links followed before giving up (Linux's own limit, ELOOP). */
const MAX_LINKS = 40

/** The path's real location (see the top of this file). */
export function realPath(path: string): string {
  let pending = resolve(path)
  for (let links = 0; links <= MAX_LINKS; links++) {
    const rest: string[] = []
    let head = pending
    let followed = false
    for (;;) {
      try {
        return resolve(realpathSync.native(head), ...rest)
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw err
      }
      // A dangling link is followed by whatever writes there: resolve it by hand, then again.
      const stat = lstatSync(head, { throwIfNoEntry: false })
      if (stat?.isSymbolicLink()) {
        pending = resolve(dirname(head), readlinkSync(head), ...rest)
        followed = true
        break
      }
      const parent = dirname(head)
      if (parent === head) return resolve(head, ...rest)
      rest.unshift(basename(head))
      head = parent
    }
    if (!followed) break
  }
  throw Object.assign(new Error(`${path}: too many levels of symbolic links`), { code: 'ELOOP' })
}

/** Whether `path` is `dir` or lies inside it, both compared as they really are (realPath). */
export function isWithin(path: string, dir: string): boolean {
  const rel = relative(realPath(dir), realPath(path))
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
}

/** Whether either of two folders holds the other (or they are one), links resolved. */
export const overlap = (a: string, b: string): boolean => isWithin(a, b) || isWithin(b, a)
