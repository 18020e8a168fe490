// The contract, run against any deployment (docs/operating.md, "After an upgrade: the contract"):
//
//   npx studio contract --base https://api.studio.example --client-id ID --client-secret SECRET
//   (npm run contract -- … is the same command)
//
// Calls every operation of the spec as its examples and error cases say (scripts/contract/run.ts),
// checks every answer against the spec, prints one line per case and `N passed, M failed, K skipped`;
// exits 1 when a case failed.
import { readFileSync } from 'node:fs'
import type { Command } from 'commander'
import { parse } from 'yaml'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import { act, command, runProgram, UsageError } from './cli.js'
import { CONTRACT_EMAIL, CONTRACT_NAME, ContractRun, type Outcome } from './contract/run.js'

/** What the contract writes and what it needs: its --help says it before anything runs. */
const ABOUT = `Checks a running deployment against the spec (spec/openapi.yaml, or --spec FILE): every operation with its request example, the documented examples of its error responses and its parameters past their bounds, each answer checked against the spec (status, headers, body). Prints a line per case, then "N passed, M failed, K skipped"; exits 1 when a case failed. Give it a client with every scope (the bootstrap client, or: npx studio clients create --name "Contract check" --scopes …). What it writes on the deployment: one lead per run, named "${CONTRACT_NAME}" <${CONTRACT_EMAIL}> with a note naming the run, stored, emailed to the studio and sent to its webhooks like any lead (its id is printed; erase it with: npx studio leads erase --email ${CONTRACT_EMAIL}); a few tokens; one failed client authentication (the documented invalid_client). It erases nothing.`

interface Values {
  base?: string
  clientId?: string
  clientSecret?: string
  spec?: string
  quiet?: boolean
}

export interface Io {
  out: (line: string) => void
}

const stdio: Io = { out: (line) => process.stdout.write(`${line}\n`) }

async function runContract(values: Values, io: Io): Promise<number> {
  const base = values.base
  const { clientId, clientSecret } = values
  if (!base || !clientId || !clientSecret) throw new UsageError('--base, --client-id and --client-secret are required')
  try {
    new URL(base)
  } catch {
    throw new UsageError(`--base must be a URL such as https://api.studio.example, not ${base}`)
  }
  const spec = new Spec(values.spec ? parse(readFileSync(values.spec, 'utf8')) : loadSpec())
  io.out(`contract: ${base.replace(/\/$/, '')} against the spec ${spec.title} ${spec.version}`)
  const show = (o: Outcome) => {
    if (values.quiet && o.result !== 'FAIL') return
    io.out(`${o.result.padEnd(4)}  ${o.label}${o.result === 'skip' ? `: ${o.problems.join('; ')}` : ''}`)
    if (o.result === 'FAIL') for (const p of o.problems) io.out(`        ${p}`)
  }
  const run = new ContractRun(spec, { base: base.replace(/\/$/, ''), clientId, clientSecret }, show)
  await run.run()
  for (const w of run.written) io.out(`wrote: ${w} ("${CONTRACT_NAME}" <${CONTRACT_EMAIL}>)`)
  const count = (r: Outcome['result']) => run.outcomes.filter((o) => o.result === r).length
  io.out(`${count('ok')} passed, ${count('FAIL')} failed, ${count('skip')} skipped`)
  return count('FAIL') > 0 ? 1 : 0
}

/** `studio contract`: the contract against a deployment. */
export function contractCommand(io: Io = stdio): Command {
  return command('contract', ABOUT, 'check a running deployment against the spec')
    .option('--base <url>', "the deployment's public base URL")
    .option('--client-id <id>', 'a client of that deployment')
    .option('--client-secret <secret>', 'its secret')
    .option('--spec <file>', 'the spec to check against (default spec/openapi.yaml)')
    .option('--quiet', 'print only failures and the summary')
    .action(act((values: Values) => runContract(values, io)))
}

/** The contract command alone, on these arguments (tests; studio.ts runs it as an area). */
export const main = (argv: string[], io: Io = stdio): Promise<number> =>
  runProgram(contractCommand(io).configureOutput({ writeOut: (text) => io.out(text.trimEnd()) }), argv)
