// A real SMTP server for the tests (the smtp-server package, on a spare port of this machine):
// it receives every message, parses it with mailparser and keeps it with its raw text. Its answer
// is programmable (accept, or refuse with a 4xx or 5xx reply), and stop() closes the port with
// every connection (clients then meet refused connections) until start() opens it again.
import type { AddressInfo } from 'node:net'
import { type ParsedMail, simpleParser } from 'mailparser'
import { SMTPServer, type SMTPServerEnvelope } from 'smtp-server'
import type { Test } from 'tap'

export interface Received {
  parsed: ParsedMail
  raw: string
  envelope: SMTPServerEnvelope
  /** Whether the message came over TLS (STARTTLS). */
  secure: boolean
}

/** Refuse the message with this reply (e.g. 550 'mailbox unavailable'), or accept it (undefined). */
export type Answer = { code: number; message: string } | undefined

export interface SmtpServer {
  /** `smtp://127.0.0.1:PORT` (no authentication; STARTTLS only when asked for). */
  url: string
  port: number
  /** The messages it accepted. */
  messages: Received[]
  /** Every message it was sent, accepted or refused. */
  attempts: number
  answer: (message: Received) => Answer
  /** Resolves when `until` holds of the accepted messages (checked after each), or rejects after `ms`. */
  waitFor(until: (messages: Received[]) => boolean, ms?: number): Promise<void>
  stop(): Promise<void>
  start(): Promise<void>
}

export interface SmtpOptions {
  /**
   * Offer STARTTLS, as a local mail catcher does, with smtp-server's own self-signed certificate
   * for localhost (no certificate a client trusts).
   */
  starttls?: boolean
}

export async function smtpServer(t: Test, options: SmtpOptions = {}): Promise<SmtpServer> {
  const waiters = new Set<() => void>()
  let server: SMTPServer | undefined
  const smtp: SmtpServer = {
    url: '',
    port: 0,
    messages: [],
    attempts: 0,
    answer: () => undefined,
    waitFor(until, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!until(smtp.messages)) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`the SMTP server did not get what was awaited within ${ms} ms (${smtp.messages.length} messages)`))
        }, ms)
        waiters.add(check)
        check()
      })
    },
    async stop() {
      if (!server) return
      const s = server
      server = undefined
      // closeTimeout 0 (below): open connections are dropped at once, not drained.
      await new Promise<void>((resolve) => s.close(() => resolve()))
    },
    async start() {
      const s = new SMTPServer({
        disabledCommands: options.starttls ? ['AUTH'] : ['STARTTLS', 'AUTH'],
        authOptional: true,
        logger: false,
        closeTimeout: 0,
        size: 1024 * 1024,
        onData(stream, session, callback) {
          const chunks: Buffer[] = []
          stream.on('data', (c: Buffer) => chunks.push(c))
          stream.on('end', async () => {
            smtp.attempts++
            const raw = Buffer.concat(chunks).toString('utf8')
            const received: Received = { parsed: await simpleParser(raw), raw, envelope: session.envelope, secure: session.secure }
            const refusal = smtp.answer(received)
            if (refusal) {
              callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }))
              return
            }
            smtp.messages.push(received)
            callback(null, 'OK: message queued')
            for (const w of [...waiters]) w()
          })
        },
      })
      s.on('error', () => {})
      await new Promise<void>((resolve) => s.listen(smtp.port, '127.0.0.1', resolve))
      smtp.port = (s.server.address() as AddressInfo).port
      smtp.url = `smtp://127.0.0.1:${smtp.port}`
      server = s
    },
  }
  await smtp.start()
  t.teardown(() => smtp.stop())
  return smtp
}

/** The lead id a message is about, read from its Message-ID (`<LEAD_ID@host>`). */
export const leadIdOf = (message: Received): string | undefined => /^<([^@>]+)@/.exec(message.parsed.messageId ?? '')?.[1]
