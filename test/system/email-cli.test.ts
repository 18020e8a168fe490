// Email to the studio through the operator's CLI (the built bundle, as a process) beside a test app
// and a real SMTP server: `email status`, `email resend` and `email test`; a dead letter (5xx)
// resent. The email itself: test/app/email.test.ts.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import type { Config } from '../../config.js'
import { EMAIL_ENDPOINT_ID } from '../../features/webhooks/repository.js'
import { leadOf, testApp, tokenFor } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { smtpServer } from '../helpers/smtp.js'
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
})

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

t.test('refused for good (5xx): a dead letter at once, which status shows and resend delivers', async (t) => {
  const smtp = await smtpServer(t)
  const { app, config } = await testApp(t, { ...emailConfig(smtp.url), webhooksFirstRetryMs: 50 })
  const { submit } = await submitter(app)
  smtp.answer = () => ({ code: 550, message: '5.7.1 Message rejected as spam' })
  const lead = await submit(leadOf(7))
  const eventId = await eventOfLead(app, lead.id)
  await until(
    'dead',
    async () =>
      (await emailOf(app, eventId))?.status === 'dead' && (await adminOf(app).repo.findEndpoint(EMAIL_ENDPOINT_ID))?.last_failure != null,
  )
  t.match(await emailOf(app, eventId), { status: 'dead', attempts: 1, last_outcome: 'SMTP 550 5.7.1' }, 'no retry of a permanent refusal')
  t.equal(smtp.attempts, 1)

  const env = { SMTP_URL: smtp.url, LEAD_EMAIL_TO: TO.join(','), PUBLIC_HOST: HOST }
  const status = await run('email', ['status'], config, env)
  t.equal(status.code, 0, status.stderr)
  t.match(
    status.stdout,
    new RegExp(
      `^email\\temail\\tfailing for \\d+s\\t0\\t0\\t1\\t-\\t-\\tSMTP 550 5\\.7\\.1 \\(\\d+s ago\\)\\tmailto:${TO.join(',')}$`,
      'm',
    ),
  )
  t.match(
    status.stdout,
    new RegExp(`^${eventId}\\temail\\tlead\\.received\\t${lead.id}\\t1 attempts\\tSMTP 550 5\\.7\\.1\\t`, 'm'),
    'the dead letter, with its lead',
  )
  const all = await run('webhooks', ['status'], config, env)
  t.match(all.stdout, /^email\temail\t/m, 'webhooks status shows the email channel beside the endpoints')

  smtp.answer = () => undefined
  const resent = await run('email', ['resend', lead.id], config, env)
  t.equal(resent.code, 0, resent.stderr)
  t.match(resent.stdout, /^queued 1 email /m)
  await smtp.waitFor((m) => m.length === 1)
  t.equal(smtp.messages[0]?.parsed.messageId, `<${lead.id}@${HOST}>`, 'the same Message-ID as the refused one')
  await until('delivered', async () => (await emailOf(app, eventId))?.status === 'delivered')

  // The queued test of the webhooks CLI works on the email channel too, through the worker.
  const queuedTest = await run('webhooks', ['test', EMAIL_ENDPOINT_ID], config, env)
  t.equal(queuedTest.code, 0, queuedTest.stderr)
  t.match(queuedTest.stdout, /^delivered \(SMTP 250\)$/m)
  t.equal(smtp.messages[1]?.parsed.subject, 'Test message from Studio API')
  const rotate = await run('webhooks', ['rotate-secret', EMAIL_ENDPOINT_ID], config, env)
  t.match(rotate.stderr, /the email channel signs nothing/)

  const wrong = await run('email', ['resend', 'no-such-lead'], config, env)
  t.equal(wrong.code, 1)
  t.match(wrong.stderr, /no event no-such-lead: give an event's webhook-id \(msg_…/, 'says what it wants')
  const none = await run('email', ['resend'], config, env)
  t.equal(none.code, 64)
  t.match(none.stderr, /give an event id \(msg_…\), a lead id, --since TIME or --dead/)
})

t.test('npm run email -- test: sends one now and prints what the SMTP server answered', async (t) => {
  const smtp = await smtpServer(t)
  const { config } = await testApp(t)
  const env = { SMTP_URL: smtp.url, LEAD_EMAIL_TO: TO.join(','), PUBLIC_HOST: HOST, LEAD_EMAIL_FROM: 'Atelier <hello@atelier.example>' }
  const sent = await run('email', ['test'], config, env)
  t.equal(sent.code, 0, sent.stdout + sent.stderr)
  t.match(sent.stdout, /^sent: the SMTP server answered 250 OK: message queued$/m)
  t.equal(smtp.messages.length, 1)
  t.match(smtp.messages[0]?.parsed, {
    subject: 'Test message from Studio API',
    from: { value: [{ address: 'hello@atelier.example', name: 'Atelier' }] },
  })

  smtp.answer = () => ({ code: 554, message: '5.7.1 Relay access denied' })
  const refused = await run('email', ['test'], config, env)
  t.equal(refused.code, 1)
  t.match(refused.stdout, /^not sent: the SMTP server answered 554 5\.7\.1 Relay access denied$/m, "the server's own words")
  await smtp.stop()
  const down = await run('email', ['test'], config, env)
  t.equal(down.code, 1)
  t.match(down.stdout, /^not sent: .*ECONNREFUSED/m)
  t.match(down.stdout, /Check SMTP_URL/)
  const unset = await run('email', ['test'], config)
  t.equal(unset.code, 1)
  t.match(unset.stderr, /SMTP_URL and LEAD_EMAIL_TO are not set/)
  const half = await run('email', ['test'], config, { SMTP_URL: smtp.url })
  t.equal(half.code, 78, 'a configuration error: EX_CONFIG')
  t.match(half.stderr, /LEAD_EMAIL_TO is required when SMTP_URL is set/)
})
