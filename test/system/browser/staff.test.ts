// Staff sign-in in a real browser (Debian's chromium, headless): a public client registered by
// DCR sends the person to the sign-in page; they type their address and the code read from a real
// SMTP server, add a passkey on the consent page (Chrome's virtual authenticator, over CDP), and
// allow; oauth4webapi exchanges the code; then, signed out, they sign in again with the passkey
// alone and allow; the client calls recent_leads over MCP and sees a lead, refreshes, and its old
// refresh token is refused. And without SMTP: the person opens the one-time enrolment link the
// operator handed over, adds a passkey there, then signs in by passkey from a client's flow. On
// SQLite, and on PostgreSQL under DATABASE_URL.
import { existsSync } from 'node:fs'
import * as oauth from 'oauth4webapi'
import type { Browser, Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { StaffEnrolments } from '../../../features/staff/enrolments.js'
import { testApp } from '../../helpers/app.js'
import { connect, textOf } from '../../helpers/mcp.js'
import { freePort, requirePart } from '../../helpers/processes.js'
import { smtpServer } from '../../helpers/smtp.js'
import {
  type Authorization,
  authorizationUrl,
  codeFrom,
  exchange,
  insecure,
  registeredClient,
  sentTo,
  submitLead,
} from '../../helpers/staff.js'
import { CHROMIUM_PATH, launchBrowser } from './harness.ts'

t.setTimeout(180_000)

const STAFF = 'mira@studio.test'

if (requirePart(t, existsSync(CHROMIUM_PATH), `Chromium (${CHROMIUM_PATH})`, "install Debian's chromium: apt-get install chromium")) {
  t.test('sign in by code, add a passkey, sign in again by passkey; tokens for recent_leads', async (t) => {
    const smtp = await smtpServer(t)
    const port = await freePort()
    // A host name, not an IP: a passkey's relying party is a domain.
    const base = `http://localhost:${port}`
    const { app } = await testApp(t, { port, publicBaseUrl: base, smtpUrl: smtp.url })
    await app.listen({ host: '127.0.0.1', port })
    await app.staff.accounts.add(STAFF, 'Mira')
    const lead = await submitLead(app, 4242)
    const client = await registeredClient(base, 'http://127.0.0.1:9/callback', 'Browser test assistant')

    const browser = await launchBrowser()
    t.teardown(() => browser.close())
    const { context, page, cdp, authenticatorId, authorize } = await withAuthenticator(browser)

    // 1. By emailed code; a passkey added at consent.
    const first = await authorizationUrl(client)
    const callback1 = await authorize(page, first, async (p) => {
      await p.getByRole('heading', { name: 'Sign in' }).waitFor()
      t.equal(await p.locator('input[name=email]').getAttribute('autocomplete'), 'email')
      const before = sentTo(smtp, STAFF)
      await p.locator('input[name=email]').fill(STAFF)
      await p.getByRole('button', { name: 'Email me a code' }).click()
      await p.getByRole('heading', { name: 'Check your email' }).waitFor()
      t.equal(await p.locator('input[name=code]').getAttribute('autocomplete'), 'one-time-code')
      t.equal(await p.locator('input[name=code]').getAttribute('inputmode'), 'numeric')
      await p.locator('input[name=code]').fill(await codeFrom(smtp, STAFF, before + 1))
      await p.getByRole('button', { name: 'Sign in' }).click()
      await p.getByRole('heading', { name: 'Allow access?' }).waitFor()
      await p.getByRole('button', { name: 'Add a passkey' }).click()
      await p.getByText('Passkey added').waitFor()
      await p.getByRole('button', { name: 'Allow' }).click()
    })
    t.equal(callback1.searchParams.get('iss'), base)
    await exchange(client, first, callback1)
    const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
    t.equal(credentials.length, 1, 'the authenticator holds the new passkey')
    t.equal(credentials[0]?.rpId, 'localhost')

    // 2. Signed out (no cookies): the passkey alone.
    await context.clearCookies()
    const sent = smtp.messages.length
    const second = await authorizationUrl(client)
    const callback2 = await authorize(page, second, async (p) => {
      await p.getByRole('heading', { name: 'Sign in' }).waitFor()
      await p.getByRole('button', { name: 'Sign in with a passkey' }).click()
      await p.getByRole('heading', { name: 'Allow access?' }).waitFor()
      await p.getByRole('button', { name: 'Allow' }).click()
    })
    t.equal(smtp.messages.length, sent, 'no code was emailed the second time')
    const tokens = await exchange(client, second, callback2)

    const mcp = await connect(t, base, tokens.access_token)
    const result = await mcp.callTool({ name: 'recent_leads', arguments: {} })
    t.match(textOf(result), lead, 'recent_leads sees the lead')

    const refreshed = await oauth.processRefreshTokenResponse(
      client.as,
      client.client,
      await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure),
    )
    t.ok(refreshed.access_token, 'refreshed')
    const old = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure)
    t.equal(old.status, 400, 'the old refresh token is refused')
  })

  t.test('no SMTP: enrol by the operator’s link, then sign in by passkey', enrolByLink)
}

/** A browser context with Chrome's virtual authenticator, and a way through a client's authorization request. */
async function withAuthenticator(browser: Browser) {
  const context = await browser.newContext()
  const page = await context.newPage()
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  })
  // The client's redirect URI: the browser lands there with the code.
  let landed: (url: URL) => void = () => {}
  await page.route('http://127.0.0.1:9/**', (route) => {
    landed(new URL(route.request().url()))
    return route.fulfill({ status: 200, contentType: 'text/plain', body: 'back at the client' })
  })
  const authorize = async (p: Page, auth: Authorization, steps: (p: Page) => Promise<void>): Promise<URL> => {
    const back = new Promise<URL>((resolve) => {
      landed = resolve
    })
    await p.goto(auth.url.toString())
    await steps(p)
    return back
  }
  return { context, page, cdp, authenticatorId, authorize }
}

/** A person the operator enrolled by link (no SMTP_URL): a passkey added there, then a client's sign-in by passkey. */
async function enrolByLink(t: Test) {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const { app } = await testApp(t, { port, publicBaseUrl: base })
  await app.listen({ host: '127.0.0.1', port })
  const person = await app.staff.accounts.add('ines@studio.test', 'Inès')
  const lead = await submitLead(app, 5151)
  const { token } = await new StaffEnrolments(app.store.db).issue(person.id)
  const client = await registeredClient(base, 'http://127.0.0.1:9/callback', 'Enrolled person’s assistant')

  const browser = await launchBrowser()
  t.teardown(() => browser.close())
  const { page, cdp, authenticatorId, authorize, context } = await withAuthenticator(browser)

  await page.goto(`${base}/oauth/enrol/${token}`)
  await page.getByRole('heading', { name: 'Add a passkey' }).waitFor()
  t.match(await page.locator('main').textContent(), /ines@studio\.test/, 'the page says whom it enrols')
  await page.getByRole('button', { name: 'Add a passkey on this device' }).click()
  await page.getByRole('heading', { name: 'Passkey added' }).waitFor()
  t.match(await page.locator('main').textContent(), `${base}/mcp?signin`, 'how to connect Claude: the URL to paste')
  const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
  t.equal(credentials.length, 1, 'the authenticator holds the new passkey')
  t.equal(credentials[0]?.rpId, 'localhost')
  await page.goto(`${base}/oauth/enrol/${token}`)
  t.match(await page.locator('main').textContent(), /cannot be used/, 'the link worked once')

  await context.clearCookies()
  const auth = await authorizationUrl(client)
  const callback = await authorize(page, auth, async (p) => {
    await p.getByRole('heading', { name: 'Sign in' }).waitFor()
    await p.getByRole('button', { name: 'Sign in with a passkey' }).click()
    await p.getByRole('heading', { name: 'Allow access?' }).waitFor()
    t.match(await p.locator('main').textContent(), /ines@studio\.test/, 'signed in as the enrolled person')
    await p.getByRole('button', { name: 'Allow' }).click()
  })
  const tokens = await exchange(client, auth, callback)
  const mcp = await connect(t, base, tokens.access_token)
  t.match(textOf(await mcp.callTool({ name: 'recent_leads', arguments: {} })), lead, 'recent_leads sees the lead')
}
