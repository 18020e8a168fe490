// What the operator CLIs share: a command-line mistake is reported with the usage (exit 2), any
// other failure with its message (exit 1); the exit code of a command that ran is its own.

/** A mistake in the command line: reported with the usage, exit status 2. */
export class UsageError extends Error {}

/** The parsed command line; what node:util's parseArgs refuses becomes a UsageError. */
export function commandLine<T>(parse: () => T): T {
  try {
    return parse()
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

export function runCli(name: string, usage: string, main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: Error) => {
      if (err instanceof UsageError) {
        process.stderr.write(`${name}: ${err.message}\n${usage}\n`)
        process.exit(2)
      }
      process.stderr.write(`${name}: ${err.message}\n`)
      process.exit(1)
    },
  )
}
