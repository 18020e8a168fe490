// `studio leads`: access and erasure requests (GDPR art. 15 and 17), and the retention cut-off
// applied by hand, in the configured storage; safe while the server runs. docs/personal-data.md.
//
//   npx studio leads export --email ada@example.com      everything held about the address, as JSON
//   npx studio leads erase --email ada@example.com       its leads and every copy; prints erased: N
//   npx studio leads erase --id LEAD_ID
//   npx studio leads purge --before 2025-01-01T00:00:00Z [--yes]  every lead received before that instant (asks first)
//
// Only `export` prints personal data (it is the answer to the person); nothing is logged.
import { createInterface } from 'node:readline'
import type { Command } from 'commander'
import { loadConfig } from '../config.js'
import { Privacy } from '../features/privacy/privacy.js'
import { ScrubIncomplete } from '../features/privacy/scrub.js'
import { parseRfc3339, RFC3339_FORM } from '../lib/rfc3339.js'
import type { Store } from '../plugins/store/open.js'
import { act, command, newDatabaseOption, subcommand, UsageError } from './cli.js'
import { openServerStore, serverPepper } from './data.js'

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

interface Values {
  email?: string
  id?: string
  before?: string
  yes?: boolean
}

/** Asks on the terminal (or reads the answer piped in); no answer (cron's empty input) is no. */
async function confirm(question: string): Promise<boolean> {
  process.stdout.write(question)
  const lines = createInterface({ input: process.stdin })
  try {
    const answer = await new Promise<string | undefined>((resolve) => {
      lines.once('line', resolve)
      lines.once('close', () => resolve(undefined))
    })
    // A piped answer is not echoed: end the question's line.
    if (!process.stdin.isTTY) process.stdout.write('\n')
    return /^\s*y(es)?\s*$/i.test(answer ?? '')
  } finally {
    lines.close()
  }
}

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
      if (!values.before) throw new UsageError(`purge needs --before TIME, ${RFC3339_FORM}`)
      const parsed = parseRfc3339(values.before)
      if ('problem' in parsed) throw new UsageError(`--before ${parsed.problem}`)
      const cutoff = parsed.instant.toISOString()
      const count = await privacy.repo.countReceivedBefore(cutoff)
      out(`before: ${cutoff} (${values.before}, in UTC)`)
      out(`leads received before it: ${count}`)
      if (count > 0 && values.yes !== true && !(await confirm(`erase these ${count} leads and every copy of them? [y/N] `))) {
        process.stderr.write('leads: not confirmed, nothing was erased (--yes purges without asking, as from cron)\n')
        return 1
      }
      return finishErasure(privacy, store, await privacy.eraseBefore(cutoff, 'retention'))
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

/** Runs one command on the configured storage. */
async function runOn(command: string, values: Values, cmd: Command): Promise<number> {
  const config = loadConfig()
  const newDatabase = cmd.optsWithGlobals().newDatabase === true
  const store = await openServerStore(config, newDatabase)
  try {
    return await run(command, values, new Privacy(store, await serverPepper(store, config, newDatabase)), store)
  } finally {
    await store.close()
  }
}

export function leadsCommand(): Command {
  const leads = command(
    'leads',
    'access and erasure requests, and the retention cut-off by hand (docs/personal-data.md)',
    'access and erasure requests, purge',
  ).addOption(newDatabaseOption())
  subcommand(
    leads,
    'export',
    'everything held about the address, as JSON: its leads, how and when each arrived, consent, where each was sent; erasures of it',
  )
    .option('--email <address>', 'the address (ASCII letters in either case; a look-alike is refused)')
    .action(act((values: Values, cmd: Command) => runOn('export', values, cmd)))
  subcommand(
    leads,
    'erase',
    "erase the address's leads (or one lead) and every copy (outbox, deliveries, dead letters, idempotency records), send lead.erased; prints erased: N",
  )
    .option('--email <address>', 'every lead of this address')
    .option('--id <lead_id>', 'this lead')
    .action(act((values: Values, cmd: Command) => runOn('erase', values, cmd)))
  subcommand(
    leads,
    'purge',
    'erase every lead received before TIME (RFC 3339 with its offset), as retention does: prints the instant and how many, then asks (--yes: no question, for cron)',
  )
    .option('--before <time>', 'an RFC 3339 time with its offset, e.g. 2025-01-01T00:00:00Z or 2025-01-01T00:00:00+02:00')
    .option('--yes', 'erase without asking (cron, scripts)')
    .action(act((values: Values, cmd: Command) => runOn('purge', values, cmd)))
  return leads
}
