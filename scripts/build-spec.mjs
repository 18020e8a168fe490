// Writes dist/spec/openapi.json from spec/openapi.yaml (`npm run build`, and `npm start` when the
// spec changed): the server reads JSON at start-up instead of parsing YAML. Plain JavaScript, so
// `npm start` runs it in its own process, before anything is compiled. The path is
// plugins/spec/load.ts's builtSpecPath (which uses the copy only when it is as new as the YAML).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parse } from 'yaml'

const root = dirname(dirname(fileURLToPath(import.meta.url)))
export const builtSpecPath = join(root, 'dist', 'spec', 'openapi.json')

export function buildSpec() {
  mkdirSync(dirname(builtSpecPath), { recursive: true })
  writeFileSync(builtSpecPath, JSON.stringify(parse(readFileSync(join(root, 'spec', 'openapi.yaml'), 'utf8'))))
  return builtSpecPath
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(`wrote ${buildSpec()}\n`)
}
