// `npm run staff -- …` (scripts/staff.ts) on a running app's storage: add, enrol, list, sessions,
// revoke, remove, and the mistakes (exit 64, exit 1). SQLite, and PostgreSQL under DATABASE_URL.
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { run } from '../helpers/cli.js'
import { live } from '../helpers/mcp.js'
import { smtpServer } from '../helpers/smtp.js'
import { authorizationUrl, Browser, exchange, insecure, registeredClient, signInByCode } from '../helpers/staff.js'

t.setTimeout(600_000)

t.test('staff add, list, sessions, revoke, remove', async (t) => {
  const smtp = await smtpServer(t)
  const server = await live(t, { smtpUrl: smtp.url })
  const env = { SMTP_URL: smtp.url, LEAD_EMAIL_TO: 'leads@studio.test' }

  const added = await run('staff', ['add', '--email', 'Grace@Studio.test', '--name', 'Grace'], server.config, env)
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^added: st_\S+ grace@studio\.test/m, 'the address is kept lowercased')
  t.equal((await run('staff', ['add', '--email', 'grace@studio.test'], server.config, env)).code, 1, 'twice: refused')
  const bad = await run('staff', ['add', '--email', 'not-an-address'], server.config, env)
  t.equal(bad.code, 64, 'a mistake in the command line')
  t.notMatch(added.stdout, /oauth\/enrol/, 'with SMTP_URL, no enrolment link: the person signs in by code')

  // Without SMTP_URL: a one-time enrolment link for the operator to hand over.
  const linkIn = (out: string) => new RegExp(`^${server.base}/oauth/enrol/([A-Za-z0-9_-]{43})$`, 'm').exec(out)?.[1]
  const opens = async (token: string | undefined) => (await fetch(`${server.base}/oauth/enrol/${token}`)).status
  const baseEnv = { PUBLIC_BASE_URL: server.base }
  const noSmtp = await run('staff', ['add', '--email', 'lin@studio.test'], server.config, baseEnv)
  t.equal(noSmtp.code, 0)
  t.match(noSmtp.stderr, /SMTP_URL is not set/, 'without SMTP_URL, the operator is told codes cannot be sent')
  const firstLink = linkIn(noSmtp.stdout)
  t.ok(firstLink, 'the enrolment link is printed')
  t.match(noSmtp.stdout, /works once, for 7 days/)
  t.equal(await opens(firstLink), 200, 'the link opens the enrolment page')
  const enrol = await run('staff', ['enrol', '--email', 'lin@studio.test'], server.config, baseEnv)
  t.equal(enrol.code, 0, enrol.stderr)
  const secondLink = linkIn(enrol.stdout)
  t.ok(secondLink, 'enrol prints a fresh link')
  t.not(secondLink, firstLink)
  t.equal(await opens(firstLink), 410, 'the earlier unused link stops working')
  t.equal(await opens(secondLink), 200)
  t.equal((await run('staff', ['enrol', '--email', 'nobody@studio.test'], server.config)).code, 1, 'enrol: not staff')
  t.equal((await run('staff', ['enrol'], server.config)).code, 64, 'enrol: no address')

  const list = await run('staff', ['list'], server.config)
  t.match(list.stdout, /grace@studio\.test {2}Grace .* sessions: 0/)

  const client = await registeredClient(server.base)
  const signIn = async () => {
    const auth = await authorizationUrl(client)
    return exchange(client, auth, await signInByCode(new Browser(), auth, client, smtp, 'grace@studio.test'))
  }
  const first = await signIn()
  const sessions = await run('staff', ['sessions', '--email', 'grace@studio.test'], server.config)
  t.equal(sessions.code, 0)
  const grant = /^(\S+) {2}grace@studio\.test {2}client (\S+)/m.exec(sessions.stdout)
  t.ok(grant, 'the session is listed with the person and the client')
  t.equal(grant?.[2], client.client.client_id)

  const revoked = await run('staff', ['revoke', '--grant', grant?.[1] as string], server.config)
  t.equal(revoked.code, 0, revoked.stderr)
  const refresh = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), first.refresh_token as string, insecure)
  t.equal(refresh.status, 400, 'the revoked session’s refresh token is refused')
  t.equal((await run('staff', ['revoke', '--grant', 'nope'], server.config)).code, 1, 'an unknown session')

  const second = await signIn()
  const removed = await run('staff', ['remove', '--email', 'grace@studio.test'], server.config)
  t.equal(removed.code, 0, removed.stderr)
  const after = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), second.refresh_token as string, insecure)
  t.equal(after.status, 400, 'a removed person’s refresh token is refused')
  t.notMatch((await run('staff', ['list'], server.config)).stdout, /grace@/)
  t.match((await run('staff', ['sessions'], server.config)).stdout, /no sessions/)
})
