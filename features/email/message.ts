// The email a stored lead becomes: rendered from its `lead.received` event (the lead's log
// entry), so whatever the entry carries (a `source`, a field the spec adds later) is shown, by
// name, with no change here. Subject and Reply-To carry the prospect's name and address; the
// Message-ID is built from the lead id, so a resent email is recognisably the same message. The
// greeting names the studio (data/playbook.json), times are in words in the studio's time zone
// (STUDIO_TIME_ZONE), and the HTML part links the address (mailto:) and the phone (tel:).
//
// Untrusted text stays text: it is cleaned by lib/text.ts's table again (control, format and
// other invisible characters removed, line breaks of every spelling a space in a one-line
// field), escaped in the HTML part (lib/html.ts), and a note's lines are indented in the
// plain-text part so none can pass for a field of ours. In headers, nothing the prospect typed is
// ever read as an RFC 2047 encoded-word: the Subject is written as encoded-words of its own
// (headerText), so a literal `=?utf-8?B?…?=` in a name arrives as those characters, never
// decoded into a bidi override or a `Bcc:` line; and a name holding `=?` stays out of Reply-To,
// where nodemailer can only quote an ASCII name and readers decode words inside quotes anyway.
import { encodeWord } from 'nodemailer/lib/mime-funcs'
import type { components } from '../../generated/openapi.js'
import { isEmailAddress } from '../../lib/email-address.js'
import { escapeHtml } from '../../lib/html.js'
import { cleanLine, cleanText } from '../../lib/text.js'

type LeadEntry = components['schemas']['LeadLogEntry'] & Record<string, unknown>

/** Who the email speaks for: the studio's name and time zone, the public host (Message-ID). */
export interface MessageStyle {
  studio: string
  timeZone: string
  publicHost: string
}

/** A message, as nodemailer takes it (less the envelope, which the channel adds). */
export interface LeadMessage {
  subject: string
  text: string
  html: string
  replyTo?: { name: string; address: string }
  messageId: string
  date: Date
}

/** Labels of the fields we know, in the order they are shown; any other field follows, by its own name. */
const FIRST: Record<string, string> = { name: 'Name', email: 'Email', phone: 'Phone', note: 'Note', source: 'Source' }
const LAST: Record<string, string> = { received_at: 'Received', id: 'Lead id', client_id: 'API client' }

/** One line of text: cleaned by the text table, every line break and run of spaces one space. */
export const oneLine = (value: string): string => cleanLine(value)

/** Free text keeps its line breaks (as \n), nothing else invisible. */
const lines = (value: string): string[] => cleanText(value).split('\n')

/**
 * A `mailto:` URL of an address, percent-encoded (RFC 6068): a `?`, `&` or `%` the address holds
 * (the spec's email format allows them before the `@`) stays part of the address, never a
 * `?cc=` or `&bcc=` of the link.
 */
const mailto = (address: string): string => {
  const at = address.lastIndexOf('@')
  return `mailto:${encodeURIComponent(address.slice(0, at))}@${encodeURIComponent(address.slice(at + 1))}`
}

/**
 * A `tel:` URL of a phone number as people write it (RFC 3966): the visual separators the spec
 * allows (spaces, `( ) - . /`) dropped, and a `(0)` after a country code with them (it is dialled
 * only from inside the country); only digits and `+` stay as they are, anything else (in a lead
 * stored before the phone rule) is percent-encoded, so nothing in it reads as a parameter.
 */
export const tel = (phone: string): string => {
  const international = phone.trimStart().startsWith('+')
  const number = (international ? phone.replace(/\(\s*0\s*\)/g, '') : phone).replace(/[\s().\-/]/g, '')
  return `tel:${[...number].map((c) => (/^[0-9+]$/.test(c) ? c : percent(c))).join('')}`
}

/** A character as the percent-encoding of its UTF-8 bytes. */
const percent = (c: string): string =>
  [...new TextEncoder().encode(c)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('')

/** An RFC 3339 time as it is written in the lead log. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/

const formats = new Map<string, Intl.DateTimeFormat>()

/** A time in words in a time zone: `Sunday, 22 November 2026 at 11:15 CET`. */
export function inWords(at: Date, timeZone: string): string {
  let format = formats.get(timeZone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-GB', {
      weekday: 'long',
      day: 'numeric',
      month: 'long',
      year: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      timeZone,
      timeZoneName: 'short',
    })
    formats.set(timeZone, format)
  }
  return format.format(at)
}

/**
 * Header text as RFC 2047 encoded-words (UTF-8, Q), whatever it holds: a reader decodes each
 * word once, so text that looks like an encoded-word inside it is shown as typed.
 */
export const headerText = (text: string): string => encodeWord(text, 'Q', 52)

const humanize = (key: string): string => {
  const words = key.replace(/[_-]+/g, ' ').trim()
  return words.charAt(0).toUpperCase() + words.slice(1)
}

const show = (value: unknown): string | undefined => {
  if (value === null || value === undefined || value === '') return undefined
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** A time of the entry (`received_at`, `consented_at`…): an RFC 3339 string under a key ending in `_at`. */
const isTime = (key: string, value: string): boolean => key.endsWith('_at') && TIMESTAMP.test(value) && !Number.isNaN(Date.parse(value))

/** The entry's fields to show, labelled, in order: ours first, any other, then the server's own. */
function fields(entry: Record<string, unknown>): { key: string; label: string; value: string }[] {
  const others = Object.keys(entry).filter((k) => !(k in FIRST) && !(k in LAST))
  const order: [string, string][] = [
    ...Object.entries(FIRST),
    ...others.map((k): [string, string] => [k, humanize(k)]),
    ...Object.entries(LAST),
  ]
  return order.flatMap(([key, label]) => {
    const value = show(entry[key])
    return value === undefined ? [] : [{ key, label, value }]
  })
}

/** The Message-ID's domain: the public host name, without a port. */
const domainOf = (publicHost: string): string => publicHost.replace(/:\d+$/, '')

/** The email of a `lead.received` event's lead. */
export function leadMessage(entry: LeadEntry, style: MessageStyle): LeadMessage {
  // A lead stored before every name was checked once cleaned may have none.
  const name = oneLine(String(entry.name ?? ''))
  const address = oneLine(String(entry.email ?? ''))
  const studio = oneLine(style.studio)
  const greeting = `New enquiry for ${studio}${name ? ` from ${name}` : ''}.`
  const rows = fields(entry)
  const shown = (key: string, value: string): string => (isTime(key, value) ? inWords(new Date(value), style.timeZone) : oneLine(value))
  const text = [
    greeting,
    '',
    ...rows.flatMap(({ key, label, value }) => {
      if (key !== 'note') return [`${label}: ${shown(key, value)}`]
      return [`${label}:`, ...lines(value).map((l) => `  ${l}`)]
    }),
    '',
    `Reply to this email to answer ${name ? `${name} ` : ''}directly.`,
    '',
  ].join('\n')
  const cell = (key: string, value: string) => {
    const line = oneLine(value)
    if (key === 'email') return `<a href="${escapeHtml(mailto(line))}">${escapeHtml(line)}</a>`
    if (key === 'phone') return `<a href="${escapeHtml(tel(line))}">${escapeHtml(line)}</a>`
    if (key === 'note') return lines(value).map(escapeHtml).join('<br>')
    if (isTime(key, value)) return `<time datetime="${escapeHtml(value)}">${escapeHtml(shown(key, value))}</time>`
    return escapeHtml(line)
  }
  const html = [
    '<!doctype html>',
    `<html lang="en"><head><meta charset="utf-8"><title>New enquiry for ${escapeHtml(studio)}</title></head>`,
    '<body style="font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#222">',
    `<p>New enquiry for ${escapeHtml(studio)}${name ? ` from <strong>${escapeHtml(name)}</strong>` : ''}.</p>`,
    '<table cellpadding="6" cellspacing="0" style="border-collapse:collapse">',
    ...rows.map(
      ({ key, label, value }) =>
        `<tr><th align="left" valign="top" style="color:#666;font-weight:normal">${escapeHtml(label)}</th><td>${cell(key, value)}</td></tr>`,
    ),
    '</table>',
    `<p>Reply to this email to answer ${name ? `${escapeHtml(name)} ` : ''}directly.</p>`,
    '</body></html>',
    '',
  ].join('\n')
  return {
    subject: name ? `New enquiry from ${name}` : 'New enquiry',
    text,
    html,
    // An address as the spec stores one (ASCII, no space, no angle bracket) is safe between `<` and `>`.
    ...(isEmailAddress(address) && { replyTo: { name: name.includes('=?') ? '' : name, address } }),
    messageId: `<${entry.id}@${domainOf(style.publicHost)}>`,
    date: new Date(entry.received_at),
  }
}

/** A test message (`npm run email -- test`, or a webhook.test event queued for the email channel). */
export function testMessage(id: string, publicHost: string, at: Date): LeadMessage {
  const text = [
    'This is a test message from Studio API.',
    '',
    'Leads will arrive at this address like this one: one email per lead, with Reply-To set to the prospect.',
    '',
  ].join('\n')
  return {
    subject: 'Test message from Studio API',
    text,
    html: `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Test</title></head><body><p>${escapeHtml(text.trim()).replace(/\n\n/g, '</p><p>')}</p></body></html>\n`,
    messageId: `<${id}@${domainOf(publicHost)}>`,
    date: at,
  }
}
