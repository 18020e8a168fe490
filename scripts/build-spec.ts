// Writes dist/spec/openapi.json from spec/openapi.yaml (run by `npm run build`): the compiled
// server reads JSON at start-up instead of parsing YAML.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { parse } from 'yaml'
import { builtSpecPath, specPath } from '../plugins/spec/load.js'

mkdirSync(dirname(builtSpecPath), { recursive: true })
writeFileSync(builtSpecPath, JSON.stringify(parse(readFileSync(specPath, 'utf8'))))
process.stdout.write(`wrote ${builtSpecPath}\n`)
