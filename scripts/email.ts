// Email to the studio (features/email): check the settings by sending a message now, see where
// the lead emails stand, send some again. The emails themselves go out from the running server,
// through the outbox, like webhooks; this works on the same storage and settings.
//
//   npm run email -- test                      send a test message now; print what the SMTP server answered
//   npm run email -- status                    the email channel: pending, delivered, dead, next attempt, last failure
//   npm run email -- resend LEAD_ID | EVENT_ID | --since TIME | --dead
import { randomUUID } from 'node:crypto'
import { parseArgs } from 'node:util'
import type { NodemailerError } from 'nodemailer'
import { type Config, loadConfig } from '../config.js'
import { envelope } from '../features/email/channel.js'
import { testMessage } from '../features/email/message.js'
import { createMailer, failedOutcome } from '../features/email/transport.js'
import { EMAIL_ENDPOINT_ID, WebhooksRepository } from '../features/webhooks/repository.js'
import { commandLine, runCli, UsageError } from './cli.js'
import { NEW_DATABASE_USAGE, openServerStore } from './data.js'
import { printDeadLetters, printStatus, replayFromCommandLine } from './deliveries.js'

const usage = `usage: npm run email -- <command>
  test                              send a test message to LEAD_EMAIL_TO now, through SMTP_URL; print the server's answer
  status                            the lead emails: pending, delivered, dead, next attempt, last failure; the dead letters
  resend LEAD_ID | EVENT_ID         email a lead again (the same Message-ID: mail clients show it once)
  resend --dead | --since TIME      every dead letter, or every lead since TIME (RFC 3339)
  ${NEW_DATABASE_USAGE}
Emails are sent by the running server (set SMTP_URL and LEAD_EMAIL_TO for it and for this command).`

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      since: { type: 'string' },
      dead: { type: 'boolean' },
      'new-database': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

const NOT_CONFIGURED = 'SMTP_URL and LEAD_EMAIL_TO are not set: set both (see README "Receiving leads") for the server and for this command'

/** Sends a test message now and prints what the SMTP server answered; 0 when it took it. */
async function sendTest(config: Config): Promise<number> {
  if (!config.smtpUrl || config.leadEmailTo.length === 0) throw new Error(NOT_CONFIGURED)
  const mailer = await createMailer({ smtpUrl: config.smtpUrl, timeoutMs: config.webhooksTimeoutSeconds * 1000 })
  const message = testMessage(`test-${randomUUID()}`, config.publicHost, new Date())
  out(`sending a test message from ${config.leadEmailFrom} to ${config.leadEmailTo.join(', ')}`)
  try {
    const info = await mailer.send(envelope(message, config.leadEmailFrom, config.leadEmailTo))
    out(`sent: the SMTP server answered ${info.response ?? '(nothing)'}`)
    if (info.rejected.length > 0) out(`refused recipients: ${info.rejected.join(', ')}`)
    out(`Message-ID: ${message.messageId}`)
    return 0
  } catch (err) {
    const e = err as NodemailerError
    const { permanent } = failedOutcome(e)
    out(`not sent: ${e.response ? `the SMTP server answered ${e.response}` : e.message}`)
    out(
      permanent
        ? 'The server refused it for good: check LEAD_EMAIL_FROM, LEAD_EMAIL_TO and the account in SMTP_URL.'
        : 'Check SMTP_URL (host, port, smtp:// or smtps://) and that the server is reachable from here.',
    )
    return 1
  } finally {
    await mailer.close()
  }
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = commandLine(() => parseOptions(argv))
  if (values.help) {
    out(usage)
    return 0
  }
  const [command, id] = positionals
  if (!command) throw new UsageError('no command given')
  const config = loadConfig()
  if (command === 'test') return sendTest(config)
  if (command !== 'status' && command !== 'resend') throw new UsageError(`unknown command ${command}`)

  const store = await openServerStore(config, values['new-database'] === true)
  const repo = new WebhooksRepository(store.db, store.dialect)
  try {
    if (!(await repo.findEndpoint(EMAIL_ENDPOINT_ID))) {
      throw new Error('no lead emails yet: the server sets up the email channel when it starts with SMTP_URL and LEAD_EMAIL_TO set')
    }
    if (command === 'status') {
      if (!config.smtpUrl) out(`note: ${NOT_CONFIGURED.replace(/: set both.*/, '')} in this shell; what counts is the server's setting`)
      printStatus(
        out,
        (await repo.status()).filter((e) => e.id === EMAIL_ENDPOINT_ID),
        new Date(),
      )
      printDeadLetters(out, await repo.deadLetters(51, EMAIL_ENDPOINT_ID), 'npm run email -- resend LEAD_ID | --dead')
      return 0
    }
    const queued = await replayFromCommandLine(repo, id, values, EMAIL_ENDPOINT_ID)
    out(`queued ${queued} email${queued === 1 ? '' : 's'} (the same Message-ID as before); the running server sends them`)
    return 0
  } finally {
    await store.close()
  }
}

runCli('email', usage, main)
