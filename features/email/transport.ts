// Sending through the studio's SMTP server with nodemailer (never our own SMTP): one pooled
// connection (deliveries to the inbox go one at a time anyway: the email endpoint has one lease),
// each send bounded by the delivery timeout, and what came of it told in short, log-safe words:
// `SMTP 250`, `SMTP 550 5.1.1`, `timeout`, `connection refused`. nodemailer is loaded on first
// use, so a server without SMTP_URL never parses it. Credentials go only over TLS (lib/smtp-url.ts):
// nodemailer gets the URL's settings, never the URL (whose query would override them).
import type { NodemailerError, SendMailOptions, SMTPPoolSentMessageInfo, Transporter } from 'nodemailer'
import { parseSmtpUrl } from '../../lib/smtp-url.js'
import { Interrupted } from '../webhooks/channel.js'

export interface Mailer {
  /** Sends the message; the server's answer. Rejects with Interrupted when `signal` aborts. */
  send(message: SendMailOptions, signal?: AbortSignal): Promise<SMTPPoolSentMessageInfo>
  close(): Promise<void>
}

export interface MailerOptions {
  smtpUrl: string
  timeoutMs: number
}

export async function createMailer(options: MailerOptions): Promise<Mailer> {
  const nodemailer = await import('nodemailer')
  const smtp = parseSmtpUrl(options.smtpUrl)
  let transport: Transporter<SMTPPoolSentMessageInfo> | undefined
  const open = () =>
    (transport ??= nodemailer.createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.secure,
      ...(smtp.auth && { auth: smtp.auth }),
      // With credentials and no TLS from the start: STARTTLS or nothing (never AUTH in clear).
      requireTLS: smtp.requireTLS,
      ignoreTLS: false,
      opportunisticTLS: false,
      ...(smtp.name && { name: smtp.name }),
      tls: smtp.tls,
      pool: true,
      maxConnections: 1,
      connectionTimeout: options.timeoutMs,
      greetingTimeout: options.timeoutMs,
      socketTimeout: options.timeoutMs,
      // Messages are built from what prospects typed: nothing in them may name a file or a URL to read.
      disableFileAccess: true,
      disableUrlAccess: true,
    }))
  return {
    async send(message, signal) {
      const timeout = AbortSignal.timeout(options.timeoutMs)
      try {
        return await open().sendMail({ ...message, signal: signal ? AbortSignal.any([signal, timeout]) : timeout })
      } catch (err) {
        if (signal?.aborted) throw new Interrupted('shutting down')
        if (timeout.aborted) throw Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })
        throw err
      }
    },
    async close() {
      transport?.close()
      transport = undefined
    },
  }
}

/** What a send refused for want of TLS is recorded as. */
export const TLS_REQUIRED =
  'TLS required: SMTP_URL has credentials, which go only over TLS, and STARTTLS did not succeed (use smtps://, or a server offering STARTTLS; allow_cleartext_auth=true for a local relay)'

/** The SMTP reply code and its enhanced status code (RFC 3463), if the server gave them. */
function reply(response: string | undefined, code: number | undefined): string {
  const enhanced = /^\d{3}[ -](\d\.\d{1,3}\.\d{1,3})\b/.exec(response ?? '')?.[1]
  return [`SMTP ${code}`, enhanced].filter(Boolean).join(' ')
}

/** What a successful send is recorded as. */
export const sentOutcome = (info: SMTPPoolSentMessageInfo): string => {
  const code = Number(/^(\d{3})/.exec(info.response ?? '')?.[1] ?? 250)
  const refused = info.rejected?.length ?? 0
  return `${reply(info.response, code)}${refused > 0 ? ` (${refused} recipient${refused > 1 ? 's' : ''} refused)` : ''}`
}

/** A failed send, briefly (never the addresses or the text of the server's answer), and whether it is for good. */
export function failedOutcome(err: NodemailerError): { failed: string; permanent: boolean } {
  // STARTTLS refused, not offered, or stripped on the way: nothing else was sent. Not for good (a
  // man in the middle may be the cause), but the operator is told what the rule is.
  if (err.code === 'ETLS') return { failed: TLS_REQUIRED, permanent: false }
  if (err.responseCode) return { failed: reply(err.response, err.responseCode), permanent: err.permanent === true }
  switch (err.originalCode ?? err.code) {
    case 'ECONNREFUSED':
      return { failed: 'connection refused', permanent: false }
    case 'ETIMEDOUT':
      return { failed: 'timeout', permanent: false }
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EDNS':
      return { failed: 'host not found', permanent: false }
    default:
      return { failed: err.code ? `failed (${err.code})` : 'failed', permanent: false }
  }
}
