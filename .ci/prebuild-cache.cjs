// Run after `npm install`. better-sqlite3 installs a prebuilt binary that prebuild-install downloads
// from the project's release page; where only the npm registry is reachable that download fails and
// npm compiles SQLite from source instead (node-gyp: about 2-3 minutes of a 2-core machine's CPU,
// most of `npm install`). prebuild-install looks first in npm's cache (<npm cache>/_prebuilds/), so
// this puts the binary just compiled there, in the form it unpacks: the next install on this
// machine (another clone, a CI rerun) takes it from the cache in a second. Nothing to do when it is
// there already, or when the package is not installed.
const { execFileSync } = require('node:child_process')
const { existsSync, mkdirSync } = require('node:fs')
const { createRequire } = require('node:module')
const { dirname, join } = require('node:path')

const root = join(__dirname, '..')
const pkgDir = join(root, 'node_modules', 'better-sqlite3')
const binary = join('build', 'Release', 'better_sqlite3.node')
if (!existsSync(join(pkgDir, binary))) process.exit(0)
const fromPkg = createRequire(join(pkgDir, 'package.json'))
const util = fromPkg('prebuild-install/util')
const pkg = fromPkg('./package.json')
const url = util.getDownloadUrl({
  pkg,
  pkg_name: pkg.name,
  runtime: 'node',
  abi: process.versions.modules,
  platform: process.platform,
  arch: process.arch,
  libc: '',
  'tag-prefix': 'v',
})
const cached = util.cachedPrebuild(url)
if (existsSync(cached)) process.exit(0)
mkdirSync(dirname(cached), { recursive: true })
execFileSync('tar', ['-czf', cached, '-C', pkgDir, binary])
console.log(`better-sqlite3: the compiled binary kept for the next install (${cached})`)
