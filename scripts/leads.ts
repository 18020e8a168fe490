// Access and erasure requests (GDPR art. 15 and 17), and the retention cut-off applied by hand, in
// the configured storage; safe while the server runs. README "Personal data".
//
//   npm run leads -- export --email ada@example.com      everything held about the address, as JSON
//   npm run leads -- erase --email ada@example.com       its leads and every copy; prints erased: N
//   npm run leads -- erase --id LEAD_ID
//   npm run leads -- purge --before 2025-01-01T00:00:00Z  every lead received before that instant
//
// Only `export` prints personal data (it is the answer to the person); nothing is logged.
import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { Privacy } from '../features/privacy/privacy.js'
import { ScrubIncomplete } from '../features/privacy/scrub.js'
import type { Store } from '../plugins/store/open.js'
import { commandLine, runCli, UsageError } from './cli.js'
import { NEW_DATABASE_USAGE, openServerStore, serverPepper } from './data.js'

const usage = `usage: npm run leads -- <command>
  export --email ADDRESS            everything held about the address (ASCII letters in either case), as JSON: its leads,
                                    how and when each arrived, consent, where each was sent; erasures of it
  erase --email ADDRESS             erase its leads and every copy (outbox, deliveries, dead letters,
                                    idempotency records), send lead.erased; prints erased: N
  erase --id LEAD_ID                erase one lead the same way
  purge --before TIME               erase every lead received before TIME (RFC 3339), as retention does
  ${NEW_DATABASE_USAGE}`

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      email: { type: 'string' },
      id: { type: 'string' },
      before: { type: 'string' },
      'new-database': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

type Values = ReturnType<typeof parseOptions>['values']

/** The erasure's lines: how many, which ids, and what became of the bytes. */
async function finishErasure(privacy: Privacy, store: Store, erased: string[]): Promise<number> {
  out(`erased: ${erased.length}`)
  for (const id of erased) out(`lead: ${id}`)
  if (store.dialect === 'postgres') {
    out('storage: PostgreSQL: the rows are deleted; their bytes stay in dead tuples and WAL until VACUUM (README "Personal data")')
    return 0
  }
  try {
    const scrubbed = await privacy.scrubFiles()
    out(`files: ${scrubbed > 0 ? 'erased bytes cleared from the database files (VACUUM, WAL truncated)' : 'nothing to clear'}`)
    return 0
  } catch (err) {
    if (!(err instanceof ScrubIncomplete)) throw err
    process.stderr.write(`leads: the leads are erased, but ${err.message}\n`)
    return 1
  }
}

async function run(command: string, values: Values, privacy: Privacy, store: Store): Promise<number> {
  switch (command) {
    case 'export': {
      if (!values.email) throw new UsageError('export needs --email ADDRESS')
      out(JSON.stringify(await privacy.exportEmail(values.email), null, 2))
      return 0
    }
    case 'erase': {
      if (!values.email === !values.id) throw new UsageError('erase needs --email ADDRESS or --id LEAD_ID (one of them)')
      const erased = values.email ? await privacy.eraseEmail(values.email) : await privacy.eraseId(values.id as string)
      return finishErasure(privacy, store, erased)
    }
    case 'purge': {
      const before = values.before ? new Date(values.before) : undefined
      if (!before || Number.isNaN(before.getTime()))
        throw new UsageError(
          `purge needs --before TIME, an RFC 3339 time such as 2025-01-01T00:00:00Z${values.before ? ` (not ${values.before})` : ''}`,
        )
      return finishErasure(privacy, store, await privacy.eraseBefore(before.toISOString(), 'retention'))
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = commandLine(() => parseOptions(argv))
  if (values.help) {
    out(usage)
    return 0
  }
  const [command] = positionals
  if (!command) throw new UsageError('no command given')
  const config = loadConfig()
  const newDatabase = values['new-database'] === true
  const store = await openServerStore(config, newDatabase)
  try {
    return await run(command, values, new Privacy(store, await serverPepper(store, config, newDatabase)), store)
  } finally {
    await store.close()
  }
}

runCli('leads', usage, main)
