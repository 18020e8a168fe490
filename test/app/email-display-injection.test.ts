// The lead email against display injection (third audit, finding 5): what the prospect typed is
// never read as an RFC 2047 encoded-word, bidi and line-break characters never reach a header
// whatever their spelling, and the HTML part's mailto: link is the address alone. A test app and
// a real SMTP server (smtp-server); what arrives is read with mailparser, as a mail client would.
import t, { type Test } from 'tap'
import { emailChannel } from '../../features/email/channel.js'
import { createMailer } from '../../features/email/transport.js'
import { EMAIL_ENDPOINT_ID, mailtoUrl } from '../../features/webhooks/repository.js'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'
import { type Received, smtpServer } from '../helpers/smtp.js'
import { adminOf } from '../helpers/webhooks.js'

const TO = ['inbox@atelier.test']
const HOST = 'api.studio.test'

const b64 = (text: string) => Buffer.from(text).toString('base64')

/** Names that decode, if a reader takes them for encoded-words, into a bidi override or a header line. */
const NAMES = [
  `Kate =?utf-8?B?${b64('\u202Egnirts')}?= Doe`,
  `=?utf-8?B?${b64('Kate\r\nBcc: victim@evil.example')}?=`,
  'Kate =?utf-8?Q?=E2=80=AE?= =?UTF-8?q?=0D=0ABcc:_victim@evil.example?=',
  'Kate =?iso-8859-1?Q?=0ABcc=3A_victim=40evil.example?= Doe',
  'Kate =?utf-8*en?B?4oCu?= Doe', // RFC 2231 language tag
]

/** What no header (and no line of the text part) may hold, in any spelling a reader decodes. */
const BIDI_OR_BREAK = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\r\n\v\f\u0085\u2028\u2029]/

function checkMessage(t: Test, message: Received, name: string, email: string): void {
  const mail = message.parsed
  t.equal(mail.subject, `New enquiry from ${name}`, `the subject shows the name as typed: ${name}`)
  t.notMatch(mail.subject ?? '', BIDI_OR_BREAK, 'no bidi control or line break in the subject')
  t.notOk(mail.headers.has('bcc') || mail.headers.has('cc'), 'no Bcc or Cc header')
  t.notOk(
    message.envelope.rcptTo.some((r) => r.address.includes('evil')),
    'sent to the studio only',
  )
  const replyTo = mail.replyTo?.value ?? []
  t.equal(replyTo.length, 1, 'one Reply-To address')
  t.equal(replyTo[0]?.address, email, 'Reply-To: the prospect')
  t.notMatch(replyTo[0]?.name ?? '', BIDI_OR_BREAK, 'no bidi control or line break in the Reply-To name')
  t.notMatch(replyTo[0]?.name ?? '', /evil|\u202E/, 'no decoded word in the Reply-To name')
  const href = /<a href="([^"]*)">/.exec(mail.html || '')?.[1]?.replaceAll('&amp;', '&') ?? ''
  const link = new URL(href)
  t.equal(link.protocol, 'mailto:', 'the link is a mailto: link')
  t.equal(link.search, '', 'the link has no query: no ?cc= or &bcc= taken from the address')
  t.equal(decodeURIComponent(link.pathname), email, 'the link is the address, percent-encoded')
}

t.test('encoded-words, bidi and ?cc= in a lead: shown as typed, never decoded into a header', async (t) => {
  const smtp = await smtpServer(t)
  const { app } = await testApp(t, { smtpUrl: smtp.url, leadEmailTo: TO, publicHost: HOST, publicBaseUrl: `https://${HOST}` })
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  // The spec's email format allows `?`, `=` and `&` before the @: a mailto: link must not read them.
  const emails = ['kate?cc=victim@evil.example', 'kate&bcc=victim@evil.example', 'kate%3Fcc=x@example.com', 'k@example.com']
  for (const [i, name] of NAMES.entries()) {
    const email = emails[i % emails.length] as string
    const res = await call(t, app, {
      method: 'POST',
      url: '/scripts/enquiry_backend.php',
      headers: auth,
      payload: { ...leadOf(i), name, email },
    })
    t.equal(res.statusCode, 200, `stored: ${name}`)
  }
  await smtp.waitFor((m) => m.length === NAMES.length)
  for (const [i, name] of NAMES.entries()) {
    const message = smtp.messages.find((m) => m.parsed.text?.includes(`Phone: ${leadOf(i).phone}`)) as Received
    checkMessage(t, message, name, emails[i % emails.length] as string)
  }
})

t.test('through the channel alone, with what intake would never let through: the same', async (t) => {
  const smtp = await smtpServer(t)
  const { app } = await testApp(t)
  const mailer = await createMailer({ smtpUrl: smtp.url, timeoutMs: 10_000 })
  t.teardown(() => mailer.close())
  const channel = emailChannel({ mailer, from: 'Studio API <leads@api.studio.test>', publicHost: HOST, studio: 'Atelier', timeZone: 'UTC' })
  const endpoint = { ...(await adminOf(app).repo.findEndpoint(EMAIL_ENDPOINT_ID)), url: mailtoUrl(TO) } as never
  // Bidi and line breaks of every spelling, raw, beside the encoded ones: removed or a space.
  const raw = 'Eve\u202E\u2067 \u0085Bcc: a@evil.example\u2028\u2029\v\f\rx =?utf-8?B?4oCu?='
  const entry = {
    id: '01939f2e-0000-7000-8000-0000000000e5',
    name: raw,
    email: 'eve?cc=victim@evil.example',
    phone: '123456',
    received_at: '2026-11-22T10:15:00.000Z',
    client_id: null,
  }
  const delivery = {
    event_id: 'msg_test',
    event_type: 'lead.received',
    payload: JSON.stringify({ type: 'lead.received', timestamp: entry.received_at, data: entry }),
    event_created_at: entry.received_at,
    attempts: 0,
  }
  t.match(await channel.deliver(endpoint, delivery as never, new AbortController().signal), { delivered: 'SMTP 250' })
  await smtp.waitFor((m) => m.length === 1)
  checkMessage(t, smtp.messages[0] as Received, 'Eve Bcc: a@evil.example x =?utf-8?B?4oCu?=', entry.email)
})
