// Staff sign-in in a real browser (Debian's chromium, headless): a public client registered by
// DCR sends the person to the sign-in page; they type their address and the code read from a real
// SMTP server, add a passkey on the consent page (Chrome's virtual authenticator, over CDP), and
// allow; oauth4webapi exchanges the code; then, signed out, they sign in again with the passkey
// alone and allow; the client calls recent_leads over MCP and sees a lead, refreshes, and its old
// refresh token is refused. Then another public client, named by a Client ID Metadata Document the
// test serves over https (helpers/cimd.ts), with no registration: signed out, the person signs in
// by passkey, the sign-in and consent pages name the client by the host that served its document
// (not the name it gives itself), they allow; oauth4webapi exchanges the code with the document's
// URL as client_id, and recent_leads answers with the lead. And without SMTP: the person opens the
// one-time enrolment link the operator handed over, adds a passkey there, then signs in by passkey
// from a client's flow. One browser for the file, a context of its own per test. On SQLite, and on
// PostgreSQL + Redis under DATABASE_URL and REDIS_URL (CI runs it on both: SCALE_OUT in
// test/tiers.mjs).
import { existsSync } from 'node:fs'
import * as oauth from 'oauth4webapi'
import type { Browser, Page } from 'playwright-core'
import t, { type Test } from 'tap'
import { StaffEnrolments } from '../../../features/staff/enrolments.js'
import { testApp } from '../../helpers/app.js'
import { clientDocument, documentClient, documentServer } from '../../helpers/cimd.js'
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
  const browser = await launchBrowser()
  t.teardown(() => browser.close())

  t.test('sign in by code, add a passkey, sign in again by passkey; tokens for recent_leads; a client by its document', async (t) => {
    const smtp = await smtpServer(t)
    const docs = await documentServer(t)
    const port = await freePort()
    // A host name, not an IP: a passkey's relying party is a domain.
    const base = `http://localhost:${port}`
    // webhooksAllowPrivate: the client's metadata document is on this machine's loopback.
    const { app } = await testApp(t, { port, publicBaseUrl: base, smtpUrl: smtp.url, webhooksAllowPrivate: true })
    await app.listen({ host: '127.0.0.1', port })
    await app.staff.accounts.add(STAFF, 'Mira')
    const lead = await submitLead(app, 4242)
    const client = await registeredClient(base, 'http://127.0.0.1:9/callback', 'Browser test assistant')

    const { context, page, cdp, authenticatorId, authorize } = await withAuthenticator(t, browser)

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
    const callback2 = await authorize(page, second, byPasskey())
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

    // 3. Another client, named by its metadata document (no registration); signed out, by passkey.
    const id = `${docs.origin}/assistant.json`
    const redirectUri = 'http://127.0.0.1:9/cimd-callback'
    docs.documents.set('/assistant.json', clientDocument(id, redirectUri, 'Claims to be Claude'))
    const byDocument = await documentClient(base, id, redirectUri)
    await context.clearCookies()
    const third = await authorizationUrl(byDocument)
    const callback3 = await authorize(page, third, async (p) => {
      await p.getByRole('heading', { name: 'Sign in' }).waitFor()
      t.match(await p.locator('main').textContent(), `${docs.host} asks`, 'sign-in: the client named by its document’s host')
      await byPasskey(async (consent) => {
        const text = await consent.locator('main').textContent()
        t.match(text, `${docs.host} asks to:`, 'consent: the client named by its verified host')
        t.notMatch(text, /Claims to be Claude|not verified/, 'not by the name it gives itself')
      })(p)
    })
    const documentTokens = await exchange(byDocument, third, callback3)
    const claims = JSON.parse(Buffer.from(documentTokens.access_token.split('.')[1] as string, 'base64url').toString())
    t.equal(claims.client_id, id, 'the token is the document’s client’s')
    const byDocumentMcp = await connect(t, base, documentTokens.access_token)
    t.match(textOf(await byDocumentMcp.callTool({ name: 'recent_leads', arguments: {} })), lead, 'recent_leads sees the lead')
  })

  t.test('no SMTP: enrol by the operator’s link, then sign in by passkey', (t) => enrolByLink(t, browser))
}

/** A browser context with Chrome's virtual authenticator, and a way through a client's authorization request. */
async function withAuthenticator(t: Test, browser: Browser) {
  const context = await browser.newContext()
  t.teardown(() => context.close())
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
    const url = await back
    // The redirect is seen as it is requested: wait until the page has landed there, so that the
    // next navigation never interrupts this one.
    await p.waitForURL((u) => u.href === url.href)
    return url
  }
  return { context, page, cdp, authenticatorId, authorize }
}

/** Signed out at the sign-in page: signs in with the passkey, then allows (after `atConsent` looked at the consent page). */
function byPasskey(atConsent?: (p: Page) => Promise<void>) {
  return async (p: Page) => {
    await p.getByRole('heading', { name: 'Sign in' }).waitFor()
    await p.getByRole('button', { name: 'Sign in with a passkey' }).click()
    await p.getByRole('heading', { name: 'Allow access?' }).waitFor()
    await atConsent?.(p)
    await p.getByRole('button', { name: 'Allow' }).click()
  }
}

/** A person the operator enrolled by link (no SMTP_URL): a passkey added there, then a client's sign-in by passkey. */
async function enrolByLink(t: Test, browser: Browser) {
  const port = await freePort()
  const base = `http://localhost:${port}`
  const { app } = await testApp(t, { port, publicBaseUrl: base })
  await app.listen({ host: '127.0.0.1', port })
  const person = await app.staff.accounts.add('ines@studio.test', 'Inès')
  const lead = await submitLead(app, 5151)
  const { token } = await new StaffEnrolments(app.store.db).issue(person.id)
  const client = await registeredClient(base, 'http://127.0.0.1:9/callback', 'Enrolled person’s assistant')

  const { page, cdp, authenticatorId, authorize, context } = await withAuthenticator(t, browser)

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
  const callback = await authorize(
    page,
    auth,
    byPasskey(async (p) => {
      t.match(await p.locator('main').textContent(), /ines@studio\.test/, 'signed in as the enrolled person')
    }),
  )
  const tokens = await exchange(client, auth, callback)
  const mcp = await connect(t, base, tokens.access_token)
  t.match(textOf(await mcp.callTool({ name: 'recent_leads', arguments: {} })), lead, 'recent_leads sees the lead')
}
