// SMTP_URL, read once and strictly: where the lead emails go, and the rule for credentials. A
// user name and password in the URL are sent only over TLS: `smtps://` (TLS from the first byte),
// or `smtp://` with STARTTLS required (a server that does not offer it, or a man in the middle
// that strips it from the server's answer, gets no AUTH command: the send fails, saying why).
// Clear-text authentication is for a relay on the same machine or network only, and only when the
// operator says so in the URL: `?allow_cleartext_auth=true`. Without credentials STARTTLS is used
// whenever the server offers it.
//
// The URL's query takes only the parameters below. nodemailer would read any other as one of its
// options, and its URL options override the ones the code sets (`?requireTLS=false`,
// `?ignoreTLS=true` would undo the rule above), so the transport is given these settings and never
// the URL itself.
import { ConfigError } from './settings.js'

export interface SmtpSettings {
  host: string
  port: number
  /** smtps://: TLS from the start. */
  secure: boolean
  auth?: { user: string; pass: string }
  /** STARTTLS must succeed before anything else is sent (credentials present, clear text not allowed). */
  requireTLS: boolean
  allowCleartextAuth: boolean
  /** The name the client greets with (EHLO). */
  name?: string
  tls: { servername?: string; rejectUnauthorized?: boolean }
}

/** The query parameters SMTP_URL takes, and what each is. */
export const SMTP_URL_PARAMETERS: Record<string, string> = {
  allow_cleartext_auth: 'true lets credentials go over an unencrypted connection (a relay on this machine or network only)',
  name: 'the host name the client greets the server with (EHLO)',
  'tls.servername': 'the name the server’s certificate is checked against',
  'tls.rejectUnauthorized': 'false accepts a certificate that does not verify (a relay with a self-signed one)',
}

export class SmtpUrlError extends Error {}

const flag = (name: string, value: string): boolean => {
  if (value === 'true') return true
  if (value === 'false') return false
  throw new SmtpUrlError(`has the parameter ${name}, which must be true or false`)
}

/** Reads SMTP_URL; SmtpUrlError saying what is wrong (never repeating the URL: it may hold a password). */
export function parseSmtpUrl(text: string): SmtpSettings {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new SmtpUrlError('is not a URL')
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new SmtpUrlError('must start with smtp:// or smtps://')
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (!host) throw new SmtpUrlError('names no host')
  const secure = url.protocol === 'smtps:'
  const settings: SmtpSettings = {
    host,
    port: url.port ? Number(url.port) : secure ? 465 : 587,
    secure,
    requireTLS: false,
    allowCleartextAuth: false,
    tls: {},
  }
  if (url.username || url.password) {
    settings.auth = { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) }
  }
  for (const [name, value] of url.searchParams) {
    switch (name) {
      case 'allow_cleartext_auth':
        settings.allowCleartextAuth = flag(name, value)
        break
      case 'name':
        settings.name = value
        break
      case 'tls.servername':
        settings.tls.servername = value
        break
      case 'tls.rejectUnauthorized':
        settings.tls.rejectUnauthorized = flag(name, value)
        break
      default:
        throw new SmtpUrlError(
          `has the parameter ${JSON.stringify(name)}, which it does not take (only ${Object.keys(SMTP_URL_PARAMETERS).join(', ')}): TLS is smtps://, or STARTTLS, required whenever the URL has credentials`,
        )
    }
  }
  settings.requireTLS = !secure && settings.auth !== undefined && !settings.allowCleartextAuth
  return settings
}

/** SMTP_URL as the configuration reads it: unchanged, or a ConfigError saying what is wrong (never the URL). */
export function checkedSmtpUrl(text: string): string {
  try {
    parseSmtpUrl(text)
    return text
  } catch (err) {
    if (err instanceof SmtpUrlError) throw new ConfigError(`Invalid configuration: SMTP_URL ${err.message}`)
    throw err
  }
}
