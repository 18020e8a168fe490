// `studio staff`: the studio's people, who sign in (emailed code) to let their assistants read
// their leads (docs/staff-sign-in.md); safe while the server runs.
//
//   npx studio staff add --email ada@studio.example [--name "Ada Lovelace"]
//                                           without SMTP_URL, prints a one-time enrolment link
//   npx studio staff enrol --email ada@studio.example      a fresh enrolment link (voids earlier ones)
//   npx studio staff list
//   npx studio staff remove --email ada@studio.example     ends every grant of theirs at once
//   npx studio staff sessions [--email ada@studio.example]  the clients each person allowed
//   npx studio staff revoke --grant GRANT_ID               ends one of them
import type { Command } from 'commander'
import pino from 'pino'
import { type Config, loadConfig } from '../config.js'
import { plausibleEmail, StaffAccounts, type StaffRow } from '../features/staff/accounts.js'
import { ENROL_DAYS, enrolPath, StaffEnrolments } from '../features/staff/enrolments.js'
import { act, command, newDatabaseOption, subcommand, UsageError } from './cli.js'
import { openServerStore } from './data.js'

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

interface Values {
  email?: string
  name?: string
  grant?: string
}

interface Parts {
  accounts: StaffAccounts
  enrolments: StaffEnrolments
  config: Config
}

/**
 * A fresh one-time enrolment link for this person, printed for the operator to hand over (it is
 * the person's way in: give it to them only), and logged with their staff id alone.
 */
async function printLink(staff: StaffRow, { enrolments, config }: Parts): Promise<void> {
  const { token, expiresAt } = await enrolments.issue(staff.id)
  out(`enrolment link for ${staff.email} (works once, for ${ENROL_DAYS} days, until ${expiresAt}; give it to them only):`)
  out(`${config.publicBaseUrl}${enrolPath(token)}`)
  pino({ level: config.logLevel, base: null }, pino.destination(2)).info(
    { event: 'staff.enrol_link_issued', staff_id: staff.id },
    'staff: enrolment link issued',
  )
}

async function run(name: string, values: Values, parts: Parts): Promise<number> {
  const { accounts } = parts
  const smtp = parts.config.smtpUrl !== undefined
  switch (name) {
    case 'add': {
      if (!values.email || !plausibleEmail(values.email.trim())) throw new UsageError('add needs --email ADDRESS (a valid email address)')
      if (await accounts.findByEmail(values.email)) {
        process.stderr.write(`staff: ${values.email} is already staff\n`)
        return 1
      }
      const row = await accounts.add(values.email, values.name?.trim() || null)
      out(`added: ${row.id} ${row.email}`)
      if (!smtp) {
        process.stderr.write(
          'staff: SMTP_URL is not set, so the server cannot email sign-in codes: this person adds a passkey through the link below instead\n',
        )
        await printLink(row, parts)
      }
      return 0
    }
    case 'enrol': {
      if (!values.email) throw new UsageError('enrol needs --email ADDRESS (or the staff id)')
      const row = await accounts.resolve(values.email)
      if (!row) {
        process.stderr.write(`staff: no staff member ${values.email}\n`)
        return 1
      }
      await printLink(row, parts)
      return 0
    }
    case 'list': {
      const rows = await accounts.list()
      const sessions = await accounts.sessions()
      for (const r of rows) {
        const n = sessions.filter((s) => s.staff_id === r.id).length
        out(`${r.id}  ${r.email}  ${r.name ?? '-'}  added ${r.created_at}  sessions: ${n}`)
      }
      if (rows.length === 0) out('no staff yet: npm run staff -- add --email ADDRESS')
      return 0
    }
    case 'remove': {
      const row = values.email ? await accounts.resolve(values.email) : undefined
      if (!values.email) throw new UsageError('remove needs --email ADDRESS (or the staff id)')
      if (!row) {
        process.stderr.write(`staff: no staff member ${values.email}\n`)
        return 1
      }
      await accounts.remove(row.id)
      out(
        `removed: ${row.id} ${row.email} (every grant and refresh token of theirs ended; their access tokens are refused within CLIENT_STATUS_TTL_SECONDS)`,
      )
      return 0
    }
    case 'sessions': {
      const row = values.email ? await accounts.resolve(values.email) : undefined
      if (values.email && !row) {
        process.stderr.write(`staff: no staff member ${values.email}\n`)
        return 1
      }
      const people = new Map((await accounts.list()).map((r) => [r.id, r.email]))
      const sessions = await accounts.sessions(row?.id)
      for (const s of sessions) {
        out(
          `${s.grant_id}  ${people.get(s.staff_id) ?? s.staff_id}  client ${s.client_id}  since ${s.created_at}  until ${s.expires_at ?? '-'}`,
        )
      }
      if (sessions.length === 0) out('no sessions')
      return 0
    }
    case 'revoke': {
      if (!values.grant) throw new UsageError('revoke needs --grant GRANT_ID (see: staff sessions)')
      if (!(await accounts.revoke(values.grant))) {
        process.stderr.write(`staff: no session ${values.grant}\n`)
        return 1
      }
      out(`revoked: ${values.grant} (its refresh tokens are refused now; its access tokens end within 10 minutes)`)
      return 0
    }
    default:
      throw new UsageError(`unknown command ${name}`)
  }
}

async function runOn(name: string, values: Values, cmd: Command): Promise<number> {
  const config = loadConfig()
  const store = await openServerStore(config, cmd.optsWithGlobals().newDatabase === true)
  try {
    return await run(name, values, { accounts: new StaffAccounts(store.db), enrolments: new StaffEnrolments(store.db), config })
  } finally {
    await store.close()
  }
}

export function staffCommand(): Command {
  const staff = command(
    'staff',
    "the studio's people who sign in to read leads from their assistants (docs/staff-sign-in.md)",
    'staff sign-in: people and their sessions',
  ).addOption(newDatabaseOption())
  subcommand(
    staff,
    'add',
    'add a person: they sign in with a code emailed to this address (no self-signup); without SMTP_URL, prints their enrolment link',
  )
    .option('--email <address>', 'their work email address')
    .option('--name <name>', 'their name, for the lists')
    .action(act((values: Values, cmd: Command) => runOn('add', values, cmd)))
  subcommand(staff, 'enrol', 'a one-time link for a person to add a passkey (7 days); their earlier unused links stop working')
    .option('--email <address>', 'their address (or their staff id)')
    .action(act((values: Values, cmd: Command) => runOn('enrol', values, cmd)))
  subcommand(staff, 'list', 'every person, with how many sessions each has').action(
    act((values: Values, cmd: Command) => runOn('list', values, cmd)),
  )
  subcommand(staff, 'remove', 'remove a person: every grant, session and refresh token of theirs ends at once')
    .option('--email <address>', 'their address (or their staff id)')
    .action(act((values: Values, cmd: Command) => runOn('remove', values, cmd)))
  subcommand(staff, 'sessions', 'the clients each person allowed (grants), newest last')
    .option('--email <address>', 'only this person’s (address or staff id)')
    .action(act((values: Values, cmd: Command) => runOn('sessions', values, cmd)))
  subcommand(staff, 'revoke', 'end one session (a grant): its refresh tokens are refused at once')
    .option('--grant <id>', 'the grant id, as `staff sessions` lists it')
    .action(act((values: Values, cmd: Command) => runOn('revoke', values, cmd)))
  return staff
}
