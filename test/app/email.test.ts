// Email to the studio, in process: a test app (its delivery worker running) and a real SMTP
// server (smtp-server, every message parsed with mailparser). The kill -9 cases run real
// processes in test/system/email-faults.test.ts; the CLI (status, resend, test) in test/system/email-cli.test.ts.
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { buildApp } from '../../app.js'
import { type Config, createConfig } from '../../config.js'
import { emailChannel } from '../../features/email/channel.js'
import { leadMessage, oneLine } from '../../features/email/message.js'
import { createMailer } from '../../features/email/transport.js'
import { EMAIL_ENDPOINT_ID, mailtoUrl } from '../../features/webhooks/repository.js'
import { call, leadOf, storageConfig, testApp, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { captureLog } from '../helpers/log.js'
import { leadIdOf, type Received, smtpServer } from '../helpers/smtp.js'
import { adminOf, until } from '../helpers/webhooks.js'

const SUBMIT = '/scripts/enquiry_backend.php'
// Addresses of this test alone: the log check below must not meet an example address another line quotes.
const TO = ['leads-inbox@atelier.test', 'owner@atelier.test']
const HOST = 'api.studio.test'

const emailConfig = (smtpUrl: string): Partial<Config> => ({
  smtpUrl,
  leadEmailTo: TO,
  publicHost: HOST,
  publicBaseUrl: `https://${HOST}`,
  studioTimeZone: 'Asia/Kolkata',
})

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']
/** A time in words in Asia/Kolkata (UTC+5:30 all year), worked out by hand rather than by Intl. */
function kolkataWords(iso: string): string {
  const d = new Date(Date.parse(iso) + 330 * 60_000)
  const two = (n: number) => String(n).padStart(2, '0')
  return `${DAYS[d.getUTCDay()]}, ${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()} at ${two(d.getUTCHours())}:${two(d.getUTCMinutes())} GMT+5:30`
}

/** What the message style is in the tests that build messages by hand. */
const STYLE = { publicHost: HOST, studio: 'Atelier Lumen', timeZone: 'Europe/Rome' }

async function submitter(app: FastifyInstance) {
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  return {
    auth,
    async submit(lead: object, key?: string): Promise<{ id: string; received_at: string }> {
      const res = await app.inject({
        method: 'POST',
        url: SUBMIT,
        headers: { ...auth, ...(key && { 'idempotency-key': key }) },
        payload: lead,
      })
      if (res.statusCode !== 200) throw new Error(`submit: ${res.statusCode} ${res.body}`)
      return res.json()
    },
  }
}

const emailOf = (app: FastifyInstance, eventId: string) => adminOf(app).repo.delivery(EMAIL_ENDPOINT_ID, eventId)

async function eventOfLead(app: FastifyInstance, leadId: string): Promise<string> {
  const [id] = await adminOf(app).repo.eventsOfLead(leadId)
  if (!id) throw new Error(`no event for lead ${leadId}`)
  return id
}

t.test('every stored lead is emailed to the studio: subject, Reply-To, Message-ID, text and HTML', async (t) => {
  const smtp = await smtpServer(t)
  const { app } = await testApp(t, emailConfig(smtp.url))
  const { auth, submit } = await submitter(app)

  const lead = { ...leadOf(1), note: 'A loft in Lisbon.\nStarting in spring.' }
  const first = await submit(lead)
  const others = await Promise.all([2, 3, 4].map((n) => submit(leadOf(n))))
  // A retry with the same Idempotency-Key stores nothing, so it emails nothing.
  const keyed = await submit(leadOf(5), 'same-key')
  t.equal((await submit(leadOf(5), 'same-key')).id, keyed.id, 'the retry got the first receipt')
  await smtp.waitFor((m) => m.length >= 5)

  const log = (await call(t, app, { url: '/leads.json', headers: auth })).json() as { id: string }[]
  t.equal(log.length, 5)
  t.same(smtp.messages.map(leadIdOf).sort(), log.map((l) => l.id).sort(), 'one email per stored lead, none other')

  const message = smtp.messages.find((m) => leadIdOf(m) === first.id) as Received
  const mail = message.parsed
  t.equal(mail.messageId, `<${first.id}@${HOST}>`, 'Message-ID: the lead id at the public host')
  t.equal(mail.subject, 'New enquiry from Prospect 1', "Subject: the prospect's name")
  t.same(mail.replyTo?.value, [{ address: 'prospect1@example.com', name: 'Prospect 1' }], 'Reply-To: the prospect')
  t.same(
    (Array.isArray(mail.to) ? mail.to : [mail.to]).flatMap((a) => a?.value.map((v) => v.address)),
    TO,
    'To: LEAD_EMAIL_TO',
  )
  t.same(message.envelope.rcptTo.map((r) => r.address).sort(), [...TO].sort(), 'the envelope goes to LEAD_EMAIL_TO only')
  t.same(mail.from?.value, [{ address: `leads@${HOST}`, name: 'Studio API' }], 'From: the default LEAD_EMAIL_FROM')
  t.equal(mail.date?.getTime(), Math.floor(Date.parse(first.received_at) / 1000) * 1000, 'Date: when the lead was received (to the second)')
  t.equal(mail.headers.get('auto-submitted'), 'auto-generated', 'auto-replies stay away')
  for (const part of [mail.text ?? '', mail.html || '']) {
    for (const value of [
      'Prospect 1',
      'prospect1@example.com',
      leadOf(1).phone,
      'A loft in Lisbon.',
      'Starting in spring.',
      kolkataWords(first.received_at),
      first.id,
    ]) {
      t.ok(part.includes(value), `${part === mail.text ? 'text' : 'HTML'} part holds ${value}`)
    }
  }
  t.match(mail.text, /^Note:\n {2}A loft in Lisbon\.\n {2}Starting in spring\.$/m, "the note's lines, indented under its label")
  t.match(mail.text, /^New enquiry for Atelier Lumen from Prospect 1\.$/m, 'the greeting names the studio (data/playbook.json)')
  t.match(mail.text, `Received: ${kolkataWords(first.received_at)}`, 'the time in words, in STUDIO_TIME_ZONE')
  t.match(mail.html, `<time datetime="${first.received_at}">${kolkataWords(first.received_at)}</time>`, 'the exact time kept in the HTML')
  t.notOk(mail.text?.includes(first.received_at), 'no raw ISO time in the text')
  t.match(mail.html, '<a href="tel:+442079460001">+44 20 7946 0001</a>', 'a tel: link for the phone')
  t.match(mail.html, '<a href="mailto:prospect1@example.com">prospect1@example.com</a>', 'a mailto: link for the address')
  t.ok(others.every((o) => smtp.messages.some((m) => leadIdOf(m) === o.id)))

  await until('recorded as delivered', async () => (await emailOf(app, await eventOfLead(app, first.id)))?.status === 'delivered')
  t.match(await emailOf(app, await eventOfLead(app, first.id)), { status: 'delivered', last_outcome: 'SMTP 250', attempts: 1 })
})

/** The header names nodemailer writes for a lead email; nothing else may appear. */
const HEADERS = ['auto-submitted', 'content-type', 'date', 'from', 'message-id', 'mime-version', 'reply-to', 'subject', 'to']

/** The message's structure and headers are ours, whatever the lead held. */
function checkIntact(t: Test, message: Received, lead: { id: string; name: string; email: string }, rows: number): void {
  const mail = message.parsed
  t.same([...mail.headers.keys()].sort(), HEADERS, 'no header but ours (no Bcc, Cc or second Subject)')
  const headerBlock = message.raw.slice(0, message.raw.indexOf('\r\n\r\n'))
  const names = headerBlock
    .split('\r\n')
    .filter((l) => !/^[ \t]/.test(l))
    .map((l) => l.slice(0, l.indexOf(':')).toLowerCase())
  t.same(names.sort(), HEADERS, 'each header once in the raw message; every other line a folded continuation')
  t.equal(mail.subject, `New enquiry from ${oneLine(lead.name)}`, 'the subject is the name, on one line')
  t.same(mail.replyTo?.value, [{ address: lead.email, name: oneLine(lead.name) }], 'Reply-To: the prospect, whole')
  t.same(message.envelope.rcptTo.map((r) => r.address).sort(), [...TO].sort(), 'sent to the studio only')
  t.equal(mail.messageId, `<${lead.id}@${HOST}>`)
  t.equal(mail.attachments.length, 0, 'no part but the text and the HTML')
  const html = mail.html || ''
  t.notMatch(html, /<(script|img|b|h1)[\s>]/i, 'no markup of the lead in the HTML')
  t.equal(html.match(/<tr>/g)?.length, rows, 'one table row per field')
  t.equal(html.match(/<\/table>/g)?.length, 1, 'one table, closed once')
  t.match(html, /&lt;script&gt;/, 'the markup shown as text')
  const text = mail.text ?? ''
  t.notMatch(text, /^(Bcc|Content-Type|Subject):/im, 'no line of the text passes for a header or a field of ours')
}

const INJECTION = {
  name: '<script>alert("name")</script>\r\nBcc: victim@evil.example\r\nSubject: free money',
  email: "o'brien&co+{x}@example.com",
  phone: '+1 (555) 010-9999',
  note: '</td></tr></table><img src=x onerror=alert(1)>\r\n\r\n--boundary\r\nContent-Type: text/html\r\n\r\n<b>bold</b>\nBcc: victim@evil.example',
}

t.test('a lead with markup and header injection in every free field: headers and HTML intact', async (t) => {
  const smtp = await smtpServer(t)
  const { app } = await testApp(t, emailConfig(smtp.url))
  const { auth, submit } = await submitter(app)
  const receipt = await submit(INJECTION)
  await smtp.waitFor((m) => m.length === 1)
  const [stored] = (await call(t, app, { url: '/leads.json', headers: auth })).json() as (typeof INJECTION & { id: string })[]
  if (!stored) throw new Error('not stored')
  t.equal(stored.id, receipt.id)
  // Name, email, phone, note, source, received, lead id, API client.
  checkIntact(t, smtp.messages[0] as Received, stored, 8)

  // The same through the channel itself, with what intake might never let through (raw CR, LF,
  // NUL, bidi controls in the name and email), so the message's safety does not rest on intake.
  const mailer = await createMailer({ smtpUrl: smtp.url, timeoutMs: 10_000 })
  t.teardown(() => mailer.close())
  const channel = emailChannel({ mailer, from: 'Studio API <leads@api.studio.test>', ...STYLE })
  const raw = {
    id: '01939f2e-0000-7000-8000-000000000001',
    name: 'Eve\u202e\r\nBcc: victim@evil.example\u0000\r\n\r\n<h1>body</h1>',
    email: 'eve@example.com',
    phone: '123456',
    note: 'x\r\n.\r\nMAIL FROM:<evil@example.com>',
    source: '<script>form</script>',
    received_at: '2026-11-22T10:15:00.000Z',
    client_id: null,
  }
  const delivery = {
    event_id: 'msg_test',
    event_type: 'lead.received',
    payload: JSON.stringify({ type: 'lead.received', timestamp: raw.received_at, data: raw }),
    event_created_at: raw.received_at,
    attempts: 0,
  }
  const endpoint = { ...(await adminOf(app).repo.findEndpoint(EMAIL_ENDPOINT_ID)), url: mailtoUrl(TO) } as never
  t.match(await channel.deliver(endpoint, delivery, new AbortController().signal), { delivered: 'SMTP 250' })
  await smtp.waitFor((m) => m.length === 2)
  // Name, email, phone, note, source, received, lead id.
  checkIntact(t, smtp.messages[1] as Received, raw, 7)
  t.equal(smtp.messages.length, 2, 'the lone dot in the note ended no message early')
  t.match(smtp.messages[1]?.parsed.text, /^Source: <script>form<\/script>$/m, 'a field the entry carries is shown, by its name')
})

t.test('the message shows whatever the log entry carries: source, and fields added later, by name', async (t) => {
  const entry = {
    id: '01939f2e-0000-7000-8000-000000000002',
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: '+44 20 7946 0958',
    source: 'form' as const,
    consented_at: '2026-11-22T10:14:59.000Z',
    budget: { min: 50_000, currency: 'EUR' },
    received_at: '2026-11-22T10:15:00.000Z',
    client_id: 'cl_website',
  }
  const m = leadMessage(entry, { ...STYLE, publicHost: 'api.studio.test:8443' })
  t.equal(m.messageId, '<01939f2e-0000-7000-8000-000000000002@api.studio.test>', 'the Message-ID domain has no port')
  t.equal(
    m.text
      .split('\n')
      .filter((l) => /^\w[\w ]*: /.test(l))
      .join('\n'),
    [
      'Name: Ada Lovelace',
      'Email: ada@example.com',
      'Phone: +44 20 7946 0958',
      'Source: form',
      'Consented at: Sunday, 22 November 2026 at 11:14 CET',
      'Budget: {"min":50000,"currency":"EUR"}',
      'Received: Sunday, 22 November 2026 at 11:15 CET',
      'Lead id: 01939f2e-0000-7000-8000-000000000002',
      'API client: cl_website',
    ].join('\n'),
    'ours first, then any other field by its name, then the server’s',
  )
  t.match(m.html, /<th[^>]*>Source<\/th><td>form<\/td>/)
  t.match(m.html, /<th[^>]*>Budget<\/th><td>\{&quot;min&quot;:50000,&quot;currency&quot;:&quot;EUR&quot;\}<\/td>/)
  t.notMatch(
    leadMessage({ ...entry, source: undefined, client_id: null } as never, STYLE).text,
    /Source|API client/,
    'absent fields are left out',
  )
})

t.test('the email speaks for the studio: its name, times in words in its zone, tel: and mailto: links', async (t) => {
  // Through a real SMTP server, read back as a mail client reads it.
  const smtp = await smtpServer(t)
  const { app } = await testApp(t)
  const mailer = await createMailer({ smtpUrl: smtp.url, timeoutMs: 10_000 })
  t.teardown(() => mailer.close())
  const channel = emailChannel({ mailer, from: 'Studio API <leads@api.studio.test>', ...STYLE, studio: 'Studio Nord & Søn' })
  const endpoint = { ...(await adminOf(app).repo.findEndpoint(EMAIL_ENDPOINT_ID)), url: mailtoUrl(TO) } as never
  const send = async (entry: Record<string, unknown>) => {
    const delivery = {
      event_id: `msg_${entry.id}`,
      event_type: 'lead.received',
      payload: JSON.stringify({ type: 'lead.received', timestamp: entry.received_at, data: entry }),
      event_created_at: entry.received_at,
      attempts: 0,
    }
    const before = smtp.messages.length
    t.match(await channel.deliver(endpoint, delivery as never, new AbortController().signal), { delivered: 'SMTP 250' })
    await smtp.waitFor((m) => m.length === before + 1)
    return (smtp.messages.at(-1) as Received).parsed
  }

  const summer = await send({
    id: '01939f2e-0000-7000-8000-0000000000a1',
    name: 'Ada Lovelace',
    email: 'ada+studio@example.com',
    phone: '+44 (0)20 7946-0958',
    received_at: '2026-07-03T21:40:00.000Z',
    client_id: null,
  })
  t.match(summer.text, /^New enquiry for Studio Nord & Søn from Ada Lovelace\.$/m, 'the greeting names the studio')
  t.match(summer.html, '<p>New enquiry for Studio Nord &amp; Søn from <strong>Ada Lovelace</strong>.</p>', 'in the HTML too, escaped')
  t.match(summer.text, /^Received: Friday, 3 July 2026 at 23:40 CEST$/m, "summer time in the studio's zone, the day it is there")
  t.match(summer.html, '<time datetime="2026-07-03T21:40:00.000Z">Friday, 3 July 2026 at 23:40 CEST</time>')
  t.match(summer.html, '<a href="tel:+442079460958">+44 (0)20 7946-0958</a>', 'tel: digits and +, the (0) left out after a country code')
  t.match(summer.html, '<a href="mailto:ada%2Bstudio@example.com">ada+studio@example.com</a>', 'mailto: percent-encoded')
  t.match(summer.text, /^Phone: \+44 \(0\)20 7946-0958$/m, 'the text shows the number as typed')

  // A lead stored before the phone rule, and without a name: still a link nothing else can be read into.
  const odd = await send({
    id: '01939f2e-0000-7000-8000-0000000000a2',
    name: '',
    email: 'x@example.com',
    phone: '020 7946 0958;ext=12?x="><b>',
    received_at: '2026-01-15T08:05:00.000Z',
    client_id: null,
  })
  const href = /href="(tel:[^"]*)"/.exec(odd.html || '')?.[1] ?? ''
  t.equal(href, 'tel:02079460958%3B%65%78%74%3D12%3F%78%3D%22%3E%3C%62%3E', 'only digits and +; everything else percent-encoded')
  t.match(href, /^tel:[0-9+%A-F]+$/)
  t.match(odd.text, /^New enquiry for Studio Nord & Søn\.$/m, 'no name: the greeting still reads')
  t.match(odd.text, /^Received: Thursday, 15 January 2026 at 09:05 CET$/m)
  t.match(odd.text, /^Reply to this email to answer directly\.$/m)
})

t.test('the SMTP server down through retries, then back: every email arrives', async (t) => {
  const smtp = await smtpServer(t)
  const log = captureLog()
  const config = createConfig({
    dataDir: testdir(t, {}),
    ...(await storageConfig(t)),
    ...emailConfig(smtp.url),
    webhooksFirstRetryMs: 2000,
    webhooksMaxAttempts: 20,
  })
  const app = await buildApp(config, { logger: { level: 'info', stream: log.stream } })
  t.teardown(() => app.close())
  await app.ready()
  const { submit } = await submitter(app)
  await smtp.stop()
  const leads = [
    { name: 'Zephyrine Quillfeather', email: 'zephyrine.quillfeather@example.org', phone: '+41 44 555 01 23', note: 'Chalet in Verbier' },
    { name: 'Bartholomew Oyelaran-Sturt', email: 'b.oyelaran.sturt@example.net', phone: '(0)20 7946 8871' },
    { name: 'Ingrid Vasquez-Holmgren', email: 'ingrid+architecture@example.com', phone: '555.867.5309' },
  ]
  const ids: string[] = []
  for (const lead of leads) ids.push((await submit(lead)).id)
  const repo = adminOf(app).repo
  await until('each email met a refused connection', async () => {
    const events = await Promise.all(ids.map((id) => eventOfLead(app, id)))
    const outcomes = await Promise.all(events.map((e) => emailOf(app, e)))
    return outcomes.every((d) => d?.last_outcome === 'connection refused' && d.status === 'pending')
  })
  // The endpoint's health is recorded as its turn ends, a moment after the delivery's outcome.
  await until('the status says so', async () => (await repo.status())[0]?.last_failure != null)
  t.match(await repo.status(), [
    { id: EMAIL_ENDPOINT_ID, kind: 'email', pending: 3, failing_since: String, last_failure: 'connection refused' },
  ])
  // Down through a retry: each email is tried again (and refused again) before the server comes back.
  await until('each email retried while the server is down', async () => {
    const events = await Promise.all(ids.map((id) => eventOfLead(app, id)))
    const outcomes = await Promise.all(events.map((e) => emailOf(app, e)))
    return outcomes.every((d) => (d?.attempts ?? 0) >= 2 && d?.status === 'pending')
  })
  t.equal(smtp.messages.length, 0, 'nothing arrived while it was down')
  await smtp.start()
  await smtp.waitFor((m) => m.length >= 3, 120_000)
  t.same(new Set(smtp.messages.map(leadIdOf)), new Set(ids), 'every lead emailed once the server is back')
  await until('recorded as delivered', async () => {
    const [email] = await repo.status()
    return email?.pending === 0 && email.failing_since === null
  })
  t.match(await repo.status(), [{ id: EMAIL_ENDPOINT_ID, pending: 0, delivered: 3, dead: 0, failing_since: null }])

  await app.close()
  const lines = log.lines()
  const failed = lines.filter((l) => l.msg === 'delivery failed; retrying later')
  t.ok(failed.length >= 3, 'the failed attempts were logged')
  t.ok(
    failed.every(
      (l) =>
        l.level === 30 &&
        l.channel === 'email' &&
        l.endpoint === EMAIL_ENDPOINT_ID &&
        l.reason === 'connection refused' &&
        l.next_attempt_at,
    ),
    'at info: channel, endpoint, reason, next attempt',
  )
  const text = log.raw.join('')
  for (const needle of [...leads.flatMap((l) => Object.values(l)), ...TO, smtp.url]) {
    t.notOk(text.includes(needle), `the log never holds ${needle.slice(0, 12)}…`)
  }
})

t.test('a server without SMTP_URL holds the queued emails back, saying why; one with it sends them', async (t) => {
  const smtp = await smtpServer(t)
  const dataDir = testdir(t, {})
  const storage = await storageConfig(t)
  const first = await buildApp(createConfig({ dataDir, ...storage, ...emailConfig(smtp.url), logLevel: 'silent' }))
  await first.ready()
  await first.close() // it set up the email channel
  const log = captureLog()
  const bare = await buildApp(createConfig({ dataDir, ...storage, webhooksFirstRetryMs: 50 }), {
    logger: { level: 'info', stream: log.stream },
  })
  t.teardown(() => bare.close())
  await bare.ready()
  t.ok(
    log.lines().some((l) => l.level === 40 && /lead emails are queued .* SMTP_URL and LEAD_EMAIL_TO are not set/.test(l.msg)),
    'said at start',
  )
  const lead = await (await submitter(bare)).submit(leadOf(3))
  const eventId = await eventOfLead(bare, lead.id)
  await until('held', async () => (await emailOf(bare, eventId))?.last_outcome != null)
  t.match(await emailOf(bare, eventId), { status: 'pending', attempts: 0, last_outcome: 'held: SMTP_URL is not set on this server' })
  await until('the status says why', async () => (await adminOf(bare).repo.status())[0]?.last_failure != null)
  t.match(await adminOf(bare).repo.status(), [
    { id: EMAIL_ENDPOINT_ID, pending: 1, last_failure: 'held: SMTP_URL is not set on this server' },
  ])
  await bare.close()

  const again = await buildApp(createConfig({ dataDir, ...storage, ...emailConfig(smtp.url), logLevel: 'silent' }))
  t.teardown(() => again.close())
  await again.ready()
  await smtp.waitFor((m) => m.some((x) => leadIdOf(x) === lead.id))
  t.pass('sent once a server with SMTP_URL runs')
})
