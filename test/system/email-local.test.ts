// The local-development recipe of docs/receiving-leads.md, tried as written: a mail catcher on this
// machine offering STARTTLS with a self-signed certificate (a real smtp-server, its own certificate
// for localhost) refuses the default SMTP_URL with a certificate error, the documented URL
// parameter `?tls.rejectUnauthorized=false` gets the message through over TLS with any certificate,
// and nodemailer's own `?ignoreTLS=true` (which would undo the TLS rule) is refused, naming it.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { testApp } from '../helpers/app.js'
import { run } from '../helpers/cli.js'
import { smtpServer } from '../helpers/smtp.js'

const TO = 'me@localhost.test'

t.test('a local mail catcher with STARTTLS and a self-signed certificate: the documented SMTP_URL works', async (t) => {
  const smtp = await smtpServer(t, { starttls: true })
  const { config } = await testApp(t)
  const send = (url: string) => run('email', ['test'], config, { SMTP_URL: url, LEAD_EMAIL_TO: TO })

  const plain = await send(smtp.url)
  t.equal(plain.code, 1, 'the default: STARTTLS is taken, and the certificate refused')
  t.match(plain.stdout, /^not sent: .*certificate/m, "Node's own words")
  t.match(plain.stdout, /docs\/receiving-leads\.md, Local development/, 'and where the recipe is')
  t.equal(smtp.messages.length, 0)

  const ignored = await send(`${smtp.url}?ignoreTLS=true`)
  t.equal(ignored.code, 78, 'a parameter SMTP_URL does not take is a configuration mistake')
  t.match(ignored.stderr, /ignoreTLS/, 'named')
  t.equal(smtp.messages.length, 0, 'nothing sent')

  const trusted = await send(`${smtp.url}?tls.rejectUnauthorized=false`)
  t.equal(trusted.code, 0, trusted.stdout + trusted.stderr)
  t.equal(smtp.messages.length, 1)
  t.equal(smtp.messages[0]?.secure, true, '?tls.rejectUnauthorized=false: over TLS, whatever the certificate')
  t.same(
    smtp.messages.map((m) => m.envelope.rcptTo.map((r) => r.address)),
    [[TO]],
  )
})

t.test('docs/receiving-leads.md gives the parameter and the webhook variable, for the server and the CLI', async (t) => {
  const doc = readFileSync(join(projectRoot, 'docs', 'receiving-leads.md'), 'utf8')
  const local = doc.slice(doc.indexOf('## Local development'))
  t.ok(doc.includes('## Local development'), 'a Local development section')
  t.match(local, '?tls.rejectUnauthorized=false')
  t.match(local, /WEBHOOKS_ALLOW_PRIVATE=true npm start/, 'the server started with the webhook variable')
  t.match(local, /WEBHOOKS_ALLOW_PRIVATE=true npx studio webhooks add --url http:\/\/127\.0\.0\.1:/, 'the CLI given it too')
})
