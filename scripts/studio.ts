// The operator's command line: `studio <area> <command> [options]` (`npx studio …`; `npm run <area> -- …`
// is the same command). Every area works on the configured storage (DATA_DIR, or DATABASE_URL: the
// server's own configuration, docs/configuration.md) and is safe while the server runs.
// `--help` at every level; the exit codes are scripts/cli.ts's (64: a mistake in the command line).
import { backupCommand, restoreCommand } from './backup.js'
import { catalogueCommand } from './catalogue.js'
import { command, runProgram } from './cli.js'
import { clientsCommand } from './clients.js'
import { clusterCommand } from './cluster.js'
import { contractCommand } from './contract.js'
import { emailCommand } from './email.js'
import { leadsCommand } from './leads.js'
import { staffCommand } from './staff.js'
import { webhooksCommand } from './webhooks.js'

export function studioProgram() {
  const program = command(
    'studio',
    "Studio API's operator commands. Each works on the storage the server is configured with (DATA_DIR, or DATABASE_URL), safe while it runs.",
  )
  for (const area of [
    clientsCommand(),
    webhooksCommand(),
    emailCommand(),
    leadsCommand(),
    staffCommand(),
    backupCommand(),
    restoreCommand(),
    catalogueCommand(),
    clusterCommand(),
    contractCommand(),
  ]) {
    program.addCommand(area)
  }
  return program
}

/** Runs the command line (the arguments after `studio`) and returns the exit code. */
export const main = (argv: string[]): Promise<number> => runProgram(studioProgram(), argv)

main(process.argv.slice(2)).then((code) => process.exit(code))
