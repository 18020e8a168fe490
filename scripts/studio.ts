// The operator's command line: `studio <area> <command> [options]` (`npx studio …`; `npm run <area> -- …`
// is the same command). Every area works on the configured storage (DATA_DIR, or DATABASE_URL: the
// server's own configuration, docs/configuration.md) and is safe while the server runs.
// `--help` at every level; the exit codes are scripts/cli.ts's (64: a mistake in the command line).
import type { Command } from 'commander'
import { command, runProgram } from './cli.js'

/**
 * The areas, in the order `studio --help` lists them, each loaded only when it runs: `studio
 * clients list` reads the store and the clients' code, not the server, the MCP SDK and the staff
 * sign-in (the CLI bundle splits at these imports). Measured with the bundle
 * (`/usr/bin/time node dist/studio.bundle.js clients list`): 1.0 s of CPU when every area was
 * loaded, 0.45 s with its own area only; the system tests run the CLI about 190 times.
 * `studio --help` and an unknown area load them all (the list, and "did you mean …?").
 */
const AREAS: Record<string, () => Promise<Command>> = {
  clients: async () => (await import('./clients.js')).clientsCommand(),
  webhooks: async () => (await import('./webhooks.js')).webhooksCommand(),
  email: async () => (await import('./email.js')).emailCommand(),
  leads: async () => (await import('./leads.js')).leadsCommand(),
  staff: async () => (await import('./staff.js')).staffCommand(),
  backup: async () => (await import('./backup.js')).backupCommand(),
  restore: async () => (await import('./backup.js')).restoreCommand(),
  catalogue: async () => (await import('./catalogue.js')).catalogueCommand(),
  cluster: async () => (await import('./cluster.js')).clusterCommand(),
  contract: async () => (await import('./contract.js')).contractCommand(),
}

/** The program with the area `argv` names (every area when it names none of them). */
export async function studioProgram(argv: string[] = []): Promise<Command> {
  const program = command(
    'studio',
    "Studio API's operator commands. Each works on the storage the server is configured with (DATA_DIR, or DATABASE_URL), safe while it runs.",
  )
  const named = argv[0] !== undefined && Object.hasOwn(AREAS, argv[0]) ? [argv[0]] : Object.keys(AREAS)
  for (const area of await Promise.all(named.map((name) => (AREAS[name] as () => Promise<Command>)()))) {
    program.addCommand(area)
  }
  return program
}

/** Runs the command line (the arguments after `studio`) and returns the exit code. */
export const main = async (argv: string[]): Promise<number> => runProgram(await studioProgram(argv), argv)

main(process.argv.slice(2)).then((code) => process.exit(code))
