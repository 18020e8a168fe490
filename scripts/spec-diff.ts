// The breaking-change gate, by hand: the working spec against the last released one.
//
//   npm run spec:diff                                  spec/openapi.yaml against spec/released/<last>.yaml
//   npm run spec:diff -- --against old.yaml            against another file
//
// Prints each change (breaking or not, where, what), then the verdict; exits 1 when a change
// breaks consumers of the release and info.version does not raise the major version. `npm test`
// runs the same gate (test/pure/spec-release.test.ts).
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Command } from 'commander'
import { parse } from 'yaml'
import { projectRoot } from '../config.js'
import { gate, lastRelease, type SpecChange } from '../lib/spec-diff.js'
import { act, command, runProgram, UsageError } from './cli.js'

const ABOUT = `Compares the working spec with the last released version and prints every change a consumer can see (operations, parameters, bodies, responses and their headers, events, security), each marked breaking or not, with where it is (a JSON pointer). Exits 1 when a change is breaking and info.version does not raise the major version; 0 otherwise.`

interface Values {
  spec?: string
  released?: string
  against?: string
}

export interface Io {
  out: (line: string) => void
}

const stdio: Io = { out: (line) => process.stdout.write(`${line}\n`) }

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document
const read = (file: string): Record<string, any> => parse(readFileSync(file, 'utf8'))

const LABEL: Record<SpecChange['kind'], string> = {
  breaking: 'BREAKING    ',
  'non-breaking': 'non-breaking',
  deprecated: 'deprecated  ',
  annotation: 'annotation  ',
  unclassified: 'unclassified',
}

async function diff(values: Values, io: Io): Promise<number> {
  const working = read(values.spec ?? join(projectRoot, 'spec', 'openapi.yaml'))
  let base = values.against
  if (!base) {
    const dir = values.released ?? join(projectRoot, 'spec', 'released')
    const last = lastRelease(readdirSync(dir))
    if (!last) throw new UsageError(`no released spec (X.Y.Z.yaml) in ${dir}`)
    base = join(dir, `${last}.yaml`)
  }
  const released = read(base)
  const verdict = gate({ version: released.info.version, doc: released }, { version: working.info.version, doc: working })

  io.out(`${released.info.version} (${base}) → ${working.info.version} (working spec): ${verdict.changes.length} change(s)`)
  for (const c of verdict.changes)
    io.out(`${LABEL[c.kind]}  ${c.where}: ${c.description}  ${c.pointer}${c.by === 'api-smart-diff' ? '' : `  [${c.by}]`}`)
  for (const line of verdict.message) io.out(line)
  return verdict.ok ? 0 : 1
}

function specDiffCommand(io: Io): Command {
  return command('spec:diff', ABOUT)
    .option('--spec <file>', 'the working spec (default spec/openapi.yaml)')
    .option('--released <dir>', 'the released specs, one X.Y.Z.yaml per version (default spec/released); the highest is the last release')
    .option('--against <file>', 'compare with this spec instead of the last release')
    .action(act((values: Values) => diff(values, io)))
    .configureOutput({ writeOut: (text) => io.out(text.trimEnd()) })
}

export const main = (argv: string[], io: Io = stdio): Promise<number> => runProgram(specDiffCommand(io), argv)

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main(process.argv.slice(2)).then((code) => process.exit(code))
