// SMTP credentials go only over TLS (third audit, finding 2): with SMTP_URL=smtp://user:pass@host:587
// and a server that did not offer STARTTLS, the client sent AUTH PLAIN with the password in clear.
// A real SMTP server (smtp-server) that offers no STARTTLS, and accepts clear-text AUTH as a badly
// configured relay would, behind a recording relay of our own that keeps every byte the client
// sends: with credentials in the URL no AUTH command, no password in any encoding and no message
// reach it, the send fails saying why (in the outcome, and from `studio email test`); with
// `?allow_cleartext_auth=true` (a local relay, said explicitly) AUTH goes out; with STARTTLS offered
// the password crosses only inside TLS. URL parameters that would undo the rule are refused at start.

import type { AddressInfo } from 'node:net'
import { createServer, type Socket, connect as tcpConnect } from 'node:net'
import type { NodemailerError } from 'nodemailer'
import { SMTPServer } from 'smtp-server'
import t, { type Test } from 'tap'
import { ConfigError, createConfig, loadConfig } from '../../config.js'
import { createMailer, failedOutcome, TLS_REQUIRED } from '../../features/email/transport.js'
import { parseSmtpUrl } from '../../lib/smtp-url.js'
import { run } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'

const USER = 'studio-relay'
const PASSWORD = 'correct horse battery staple'

interface Relay {
  /** The port clients connect to (the recording relay in front of the SMTP server). */
  port: number
  /** Everything clients sent, as it crossed the wire. */
  wire(): Buffer
  /** The commands the SMTP server read, and whether the connection was TLS when AUTH arrived. */
  commands: string[]
  auths: { user: string; password: string; secure: boolean }[]
  messages: number
}

/** A real SMTP server (STARTTLS offered or not) that accepts clear-text AUTH, behind a relay recording the client's bytes. */
async function relay(t: Test, offerStartTls: boolean): Promise<Relay> {
  const seen: Relay = { port: 0, wire: () => Buffer.concat(chunks), commands: [], auths: [], messages: 0 }
  const chunks: Buffer[] = []
  const record = (meta: { tnx?: string; command?: string }) => {
    if (meta?.tnx === 'command' && meta.command) seen.commands.push(meta.command)
  }
  const logger = { debug: record, info: record, error: () => {}, warn: () => {}, trace: () => {}, fatal: () => {}, level: 'debug' }
  const smtp = new SMTPServer({
    ...(offerStartTls ? {} : { disabledCommands: ['STARTTLS'] }),
    allowInsecureAuth: true,
    authMethods: ['PLAIN', 'LOGIN'],
    logger: logger as never,
    closeTimeout: 0,
    onAuth(auth, session, callback) {
      seen.auths.push({ user: auth.username ?? '', password: auth.password ?? '', secure: session.secure })
      callback(null, { user: auth.username })
    },
    onData(stream, _session, callback) {
      stream.resume()
      stream.on('end', () => {
        seen.messages++
        callback(null, 'OK')
      })
    },
  })
  smtp.on('error', () => {})
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve))
  const smtpPort = (smtp.server.address() as AddressInfo).port
  const sockets = new Set<Socket>()
  const front = createServer((client) => {
    const upstream = tcpConnect(smtpPort, '127.0.0.1')
    sockets.add(client).add(upstream)
    client.on('data', (d: Buffer) => chunks.push(d))
    client.pipe(upstream).pipe(client)
    const end = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
  })
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
  seen.port = (front.address() as AddressInfo).port
  t.teardown(async () => {
    for (const s of sockets) s.destroy()
    await new Promise((r) => front.close(r))
    await new Promise((r) => smtp.close(() => r(undefined)))
  })
  return seen
}

const message = { from: 'leads@studio.test', to: 'studio@studio.test', subject: 'a lead', text: 'hello' }

/** What the client sent must carry neither an AUTH command nor the password in any form SMTP AUTH uses. */
function noCredentialsOnTheWire(t: Test, r: Relay): void {
  const wire = r.wire().toString('latin1')
  t.notMatch(wire, /^AUTH\b/im, 'no AUTH command on the wire')
  for (const [form, text] of [
    ['plain', PASSWORD],
    ['PLAIN', Buffer.from(`\0${USER}\0${PASSWORD}`).toString('base64')],
    ['LOGIN', Buffer.from(PASSWORD).toString('base64')],
  ]) {
    t.notOk(wire.includes(text as string), `the password is not on the wire (${form})`)
  }
  t.same(r.auths, [], 'the SMTP server was never asked to authenticate')
  t.notOk(r.commands.includes('AUTH'), 'and read no AUTH command')
}

t.test('credentials and no STARTTLS offered: no AUTH, no password, no message; the outcome says why', async (t) => {
  const r = await relay(t, false)
  const url = `smtp://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${r.port}`
  const mailer = await createMailer({ smtpUrl: url, timeoutMs: 10_000 })
  t.teardown(() => mailer.close())
  const err = (await mailer.send(message).then(
    () => undefined,
    (e: unknown) => e,
  )) as NodemailerError | undefined
  t.ok(err, 'the send failed')
  t.same(failedOutcome(err as NodemailerError), { failed: TLS_REQUIRED, permanent: false }, 'recorded as TLS required, retried')
  t.match(TLS_REQUIRED, /smtps:\/\/.*allow_cleartext_auth=true/, 'naming both ways out')
  noCredentialsOnTheWire(t, r)
  t.equal(r.messages, 0, 'no message was handed over')
  t.ok(r.commands.includes('STARTTLS'), 'the client asked for TLS first')
})

t.test('studio email test with such a URL: exit 1, saying TLS is required; nothing crosses', async (t) => {
  const r = await relay(t, false)
  const config = createConfig({ dataDir: testdir(t, {}), databaseUrl: undefined })
  const res = await run('email', ['test'], config, {
    SMTP_URL: `smtp://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${r.port}`,
    LEAD_EMAIL_TO: 'studio@studio.test',
  })
  t.equal(res.code, 1, res.stderr)
  t.match(res.stdout, /not sent: TLS required: SMTP_URL has credentials/)
  noCredentialsOnTheWire(t, r)
})

t.test('?allow_cleartext_auth=true, said explicitly (a local relay): AUTH goes out and the message is sent', async (t) => {
  const r = await relay(t, false)
  const url = `smtp://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${r.port}?allow_cleartext_auth=true`
  const mailer = await createMailer({ smtpUrl: url, timeoutMs: 10_000 })
  t.teardown(() => mailer.close())
  await mailer.send(message)
  t.same(r.auths, [{ user: USER, password: PASSWORD, secure: false }], 'authenticated in clear, as asked')
  t.equal(r.messages, 1)
})

t.test('STARTTLS offered: the password crosses only inside TLS', async (t) => {
  const r = await relay(t, true)
  // smtp-server's built-in certificate is self-signed: the documented parameter accepts it.
  const url = `smtp://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${r.port}?tls.rejectUnauthorized=false`
  const mailer = await createMailer({ smtpUrl: url, timeoutMs: 10_000 })
  t.teardown(() => mailer.close())
  await mailer.send(message)
  t.same(r.auths, [{ user: USER, password: PASSWORD, secure: true }], 'AUTH arrived over TLS')
  t.equal(r.messages, 1)
  const wire = r.wire().toString('latin1')
  t.notOk(wire.includes(Buffer.from(`\0${USER}\0${PASSWORD}`).toString('base64')), 'the password is not readable on the wire')
  t.notMatch(wire, /^AUTH\b/im, 'nor the AUTH command')
})

t.test('SMTP_URL parameters that would undo the rule are refused at start (exit 78), naming the parameter', async (t) => {
  const base = 'smtp://u:p@mail.example:587'
  for (const query of [
    'requireTLS=false',
    'ignoreTLS=true',
    'secure=false',
    'opportunisticTLS=true',
    'auth.user=x',
    'allow_cleartext_auth=yes',
  ]) {
    try {
      loadConfig({ SMTP_URL: `${base}?${query}`, LEAD_EMAIL_TO: 'studio@example.com' })
      t.fail(`?${query} accepted`)
    } catch (err) {
      t.ok(err instanceof ConfigError, `?${query} refused`)
      t.match((err as Error).message, /^Invalid configuration: SMTP_URL has the parameter .*(does not take|must be true or false)/)
      t.notMatch((err as Error).message, /u:p@/, 'the URL (and its password) is not repeated')
    }
  }
  t.has(parseSmtpUrl(base), { requireTLS: true, secure: false, auth: { user: 'u', pass: 'p' } }, 'credentials: STARTTLS required')
  t.has(parseSmtpUrl('smtps://u:p@mail.example'), { requireTLS: false, secure: true, port: 465 }, 'smtps: TLS from the start')
  t.has(parseSmtpUrl('smtp://mail.example:25'), { requireTLS: false }, 'no credentials: STARTTLS when offered')
  t.has(parseSmtpUrl(`${base}?allow_cleartext_auth=true`), { requireTLS: false, allowCleartextAuth: true })
  const res = await run('email', ['test'], createConfig({ dataDir: testdir(t, {}), databaseUrl: undefined }), {
    SMTP_URL: `${base}?ignoreTLS=true`,
    LEAD_EMAIL_TO: 'studio@example.com',
  })
  t.equal(res.code, 78, 'the command line exits 78 (configuration)')
  t.match(res.stderr, /SMTP_URL .*"ignoreTLS"/)
})
