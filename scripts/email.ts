// Email to the studio (features/email): check the settings by sending a message now, see where
// the lead emails stand, send some again. The emails themselves go out from the running server,
// through the outbox, like webhooks; this works on the same storage and settings.
//
//   npm run email -- test                      send a test message now; print what the SMTP server answered
//   npm run email -- status                    the email channel: pending, delivered, dead, next attempt, last failure
//   npm run email -- resend LEAD_ID | EVENT_ID | --since TIME | --dead
import { randomUUID } from 'node:crypto'
import type { Command } from 'commander'
import type { NodemailerError } from 'nodemailer'
import { type Config, loadConfig } from '../config.js'
import { envelope } from '../features/email/channel.js'
import { testMessage } from '../features/email/message.js'
import { createMailer, failedOutcome } from '../features/email/transport.js'
import { EMAIL_ENDPOINT_ID, WebhooksRepository } from '../features/webhooks/repository.js'
import { act, command, newDatabaseOption, subcommand } from './cli.js'
import { openServerStore } from './data.js'
import { printDeadLetters, printStatus, replayFromCommandLine } from './deliveries.js'

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

const NOT_CONFIGURED = 'SMTP_URL and LEAD_EMAIL_TO are not set: set both (docs/receiving-leads.md) for the server and for this command'

/** Node's words for a certificate it does not trust (expired, self-signed, another host's). */
const UNTRUSTED = /certificate|self[- ]signed|altnames/i

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
    const { permanent, failed } = failedOutcome(e)
    out(`not sent: ${e.code === 'ETLS' ? failed : e.response ? `the SMTP server answered ${e.response}` : e.message}`)
    out(
      permanent
        ? 'The server refused it for good: check LEAD_EMAIL_FROM, LEAD_EMAIL_TO and the account in SMTP_URL.'
        : UNTRUSTED.test(e.message)
          ? "The SMTP server's certificate is not trusted here. A mail catcher on your own machine: see docs/receiving-leads.md, Local development."
          : 'Check SMTP_URL (host, port, smtp:// or smtps://) and that the server is reachable from here.',
    )
    return 1
  } finally {
    await mailer.close()
  }
}

/** The email channel's deliveries on the configured storage; closed after `fn`. */
async function withEmailChannel(cmd: Command, fn: (repo: WebhooksRepository, config: Config) => Promise<void>): Promise<number> {
  const config = loadConfig()
  const store = await openServerStore(config, cmd.optsWithGlobals().newDatabase === true)
  try {
    const repo = new WebhooksRepository(store.db, store.dialect)
    if (!(await repo.findEndpoint(EMAIL_ENDPOINT_ID))) {
      throw new Error('no lead emails yet: the server sets up the email channel when it starts with SMTP_URL and LEAD_EMAIL_TO set')
    }
    await fn(repo, config)
    return 0
  } finally {
    await store.close()
  }
}

export function emailCommand(): Command {
  const email = command(
    'email',
    'the lead emails to the studio (SMTP_URL, LEAD_EMAIL_TO): sent by the running server; set the same variables for these commands',
    'the lead emails: test, status, resend',
  ).addOption(newDatabaseOption())

  subcommand(email, 'test', "send a test message to LEAD_EMAIL_TO now, through SMTP_URL; print the server's answer").action(
    act(() => sendTest(loadConfig())),
  )

  subcommand(email, 'status', 'the lead emails: pending, delivered, dead, next attempt, last failure; the dead letters').action(
    act((_opts: object, cmd: Command) =>
      withEmailChannel(cmd, async (repo, config) => {
        if (!config.smtpUrl) out(`note: ${NOT_CONFIGURED.replace(/: set both.*/, '')} in this shell; what counts is the server's setting`)
        printStatus(
          out,
          (await repo.status()).filter((e) => e.id === EMAIL_ENDPOINT_ID),
          new Date(),
        )
        printDeadLetters(out, await repo.deadLetters(51, EMAIL_ENDPOINT_ID), 'studio email resend LEAD_ID | --dead')
      }),
    ),
  )

  subcommand(email, 'resend', 'email again (the same Message-ID: mail clients show it once): a lead, an event, --since TIME or --dead')
    .argument('[id]', 'a lead id or an event id (msg_…)')
    .option('--since <time>', 'every lead since TIME (RFC 3339)')
    .option('--dead', 'every dead letter')
    .action(
      act((id: string | undefined, opts: { since?: string; dead?: boolean }, cmd: Command) =>
        withEmailChannel(cmd, async (repo) => {
          const queued = await replayFromCommandLine(repo, id, opts, EMAIL_ENDPOINT_ID)
          out(`queued ${queued} email${queued === 1 ? '' : 's'} (the same Message-ID as before); the running server sends them`)
        }),
      ),
    )
  return email
}
