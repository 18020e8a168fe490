// What every area of the operator's command line shares (`studio <area> <command>`, scripts/studio.ts),
// on commander: `--help` at every level, and the exit codes of sysexits.h, so that scripts and cron
// jobs can tell a mistake in the command line from a failure:
//   0   done
//   1   the command ran and failed (a message says why)
//   64  EX_USAGE: an unknown area, command or option (with the closest valid one: "did you mean
//       --email?"), a missing argument, a value that cannot be read
//   78  EX_CONFIG: the environment's configuration is wrong (the variable is named)
import { Command, CommanderError, Option } from 'commander'
import { ConfigError } from '../config.js'

export const EX_USAGE = 64
export const EX_CONFIG = 78

/** A mistake in the command line found after parsing (a value that cannot be read, a missing one): exit 64. */
export class UsageError extends Error {}

/**
 * A command set up like every other: errors are thrown to runProgram (which picks the exit code),
 * suggestions on. `summary`: its line in its parent's list of commands (default: the description).
 */
export function command(name: string, description: string, summary?: string): Command {
  const cmd = new Command(name)
  if (summary) cmd.summary(summary)
  return cmd
    .description(description)
    .exitOverride()
    .showSuggestionAfterError(true)
    .showHelpAfterError('(add --help for usage)')
    .allowExcessArguments(false)
    .configureHelp({ sortSubcommands: false, showGlobalOptions: true })
}

/** A subcommand of `parent`, set up like command(). */
export function subcommand(parent: Command, name: string, description: string): Command {
  const sub = command(name, description)
  parent.addCommand(sub)
  return sub
}

/** `--new-database`, which the commands that open the storage take (scripts/data.ts says why). */
export const newDatabaseOption = () =>
  new Option(
    '--new-database',
    'create the database (and key) if the data folder has none: a new installation set up before its first start',
  )

/** The exit code an action returned (commander's actions return nothing of their own). */
let actionCode = 0

/** An action that returns its exit code. */
export function act<A extends unknown[]>(fn: (...args: A) => Promise<number> | number): (...args: A) => Promise<void> {
  return async (...args: A) => {
    actionCode = await fn(...args)
  }
}

/** The value of an option the command needs: a UsageError naming it when absent. */
export function need<T>(value: T | undefined, what: string, commandName: string): T {
  if (value === undefined || value === '') throw new UsageError(`${commandName} needs ${what}`)
  return value
}

/** The path of a command for messages: `studio webhooks add`. */
export function pathOf(cmd: Command): string {
  const names: string[] = []
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/** Applies command()'s settings to every command under `root` (addCommand does not pass them down). */
function settleAll(root: Command): void {
  for (const sub of root.commands) {
    sub.exitOverride().showSuggestionAfterError(true).showHelpAfterError('(add --help for usage)')
    settleAll(sub)
  }
}

/**
 * Runs `program` on `argv` (the arguments after the program's name) and returns the exit code; the
 * messages are written here. Never exits the process itself: studio.ts does.
 */
export async function runProgram(program: Command, argv: string[]): Promise<number> {
  settleAll(program)
  actionCode = 0
  let running: Command = program
  program.hook('preAction', (_root, action) => {
    running = action
  })
  try {
    await program.parseAsync(argv, { from: 'user' })
    return actionCode
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit 0; commander has already written every message.
      return err.exitCode === 0 ? 0 : EX_USAGE
    }
    if (err instanceof UsageError) {
      process.stderr.write(`${pathOf(running)}: ${err.message}\n(add --help for usage)\n`)
      return EX_USAGE
    }
    if (err instanceof ConfigError) {
      process.stderr.write(`${pathOf(running)}: ${err.message}\n`)
      return EX_CONFIG
    }
    process.stderr.write(`${pathOf(running)}: ${(err as Error).message}\n`)
    return 1
  }
}
