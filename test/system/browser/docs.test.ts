// The reference page in a real browser against the real server: a newcomer opens /docs, reads the
// getting-started guide, gets a token through the Authorize dialog (client credentials) and stores
// a lead with "Try it out". Screenshots of the docs page and a project page go to test-artifacts/.
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { projectRoot } from '../../../config.js'
import { newClient } from '../../helpers/app.js'
import { live } from '../../helpers/mcp.js'
import { requirePart } from '../../helpers/processes.js'
import { CHROMIUM_PATH, launchBrowser } from './harness.ts'

const artifacts = join(projectRoot, 'test-artifacts')

if (requirePart(t, existsSync(CHROMIUM_PATH), `Chromium (${CHROMIUM_PATH})`, "install Debian's chromium: apt-get install chromium")) {
  mkdirSync(artifacts, { recursive: true })

  t.test('/docs: a token from the Authorize dialog, then a lead stored from the page', async (t) => {
    const { app, base } = await live(t)
    const client = await newClient(app, ['write:leads', 'read:leads'])
    const browser = await launchBrowser()
    t.teardown(() => browser.close())
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    page.on('requestfailed', (req) => errors.push(`request failed: ${req.url()}`))
    const external: string[] = []
    page.on('request', (req) => {
      if (!req.url().startsWith(base) && !req.url().startsWith('data:')) external.push(req.url())
    })

    await page.goto(`${base}/docs/`)
    const title = page.locator('.swagger-ui .info .title')
    await title.waitFor()
    t.match(await title.textContent(), /Studio API/, 'the spec is titled')
    t.match(await page.title(), new RegExp(`${app.playbook.studio.name}`), 'the page is titled for the studio')
    const guide = page.locator('.swagger-ui .info .description')
    t.match(await guide.textContent(), /Getting started/, 'the getting-started guide is on the page')
    t.match(await guide.textContent(), /Agent apps \(MCP\)/, 'and the agent apps')
    t.equal(await page.locator('.swagger-ui section.models').count(), 0, 'no Schemas list')
    // Authorize is in the first screen, above the getting-started guide (not two screens down).
    const authorize = await page.locator('.swagger-ui .btn.authorize').first().boundingBox()
    const guideBox = await guide.boundingBox()
    t.ok(authorize && authorize.y + authorize.height <= 900, `Authorize is on the first screen (at y=${authorize?.y})`)
    t.ok(authorize && guideBox && authorize.y < guideBox.y, 'above the guide')
    await page.screenshot({ path: join(artifacts, 'docs.png'), fullPage: false })

    // Authorize: the OAuth2 client-credentials flow against /api/token, from the page.
    await page
      .getByRole('button', { name: /Authorize/ })
      .first()
      .click()
    const dialog = page.locator('.dialog-ux .modal-ux')
    await dialog.waitFor()
    t.equal(
      await dialog.locator('input[type=text][id*=api_key], input[id*=X-API-Key]').count(),
      0,
      'no API-key field (no operation accepts keys)',
    )
    await dialog.getByLabel('client_id:').fill(client.client_id)
    await dialog.getByLabel('client_secret:').fill(client.client_secret)
    await dialog.locator('label[for^="write:leads-clientCredentials"]').click()
    const tokenCall = page.waitForResponse((res) => res.url() === `${base}/api/token`)
    await dialog.getByRole('button', { name: 'Apply given OAuth2 credentials' }).click()
    const tokenResponse = await tokenCall
    t.equal(tokenResponse.status(), 200, 'the page obtained a token')
    t.equal((await tokenResponse.json()).scope, 'write:leads', 'with the scope ticked in the dialog')
    await dialog.locator('.auth-container h6', { hasText: 'Authorized' }).waitFor()
    await page.screenshot({ path: join(artifacts, 'docs-authorized.png') })
    // Nothing of the credentials stays in the browser's storage (persistAuthorization off).
    const access = ((await tokenResponse.json()) as { access_token: string }).access_token
    const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }))
    t.notOk(stored.includes(client.client_secret), 'the client secret is in no storage')
    t.notOk(stored.includes(access), 'nor the access token')
    await dialog.getByRole('button', { name: 'Close' }).first().click()

    // Try it out: submitLead with the example body.
    const operation = page.locator('#operations-leads-submitLead')
    await operation.locator('.opblock-summary').click()
    const body = operation.locator('textarea.body-param__text')
    await body.waitFor()
    t.match(await body.inputValue(), /Ada Lovelace/, 'the body is pre-filled with the real example')
    const leadCall = page.waitForResponse((res) => res.url() === `${base}/scripts/enquiry_backend.php`)
    await operation.getByRole('button', { name: 'Execute' }).click()
    const leadResponse = await leadCall
    t.equal(leadResponse.status(), 200, 'the lead was accepted')
    t.match(await leadResponse.json(), { status: 'received' })
    await operation.locator('.live-responses-table').waitFor()
    t.equal(await app.leads.count(), 1, 'the lead is stored')
    await operation.scrollIntoViewIfNeeded()
    await page.screenshot({ path: join(artifacts, 'docs-try-it-out.png') })

    t.same(errors, [], 'no page errors, no failed requests')
    t.same(external, [], 'no request leaves this server')
  })

  t.test('a project page: the website form stores a lead with the consent box ticked', async (t) => {
    const { app, base } = await live(t, { leadsAllowAnonymous: true })
    const project = app.catalogue.current()?.projects[0]
    if (!project) throw new Error('no catalogue')
    const browser = await launchBrowser()
    t.teardown(() => browser.close())
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } })
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    page.on('console', (msg) => msg.type() === 'error' && errors.push(msg.text()))
    await page.goto(`${base}/projects/${project.id}`)
    t.equal(await page.locator('h1').textContent(), project.title)
    await page.screenshot({ path: join(artifacts, 'project-page.png'), fullPage: true })

    await page.getByLabel('Full name').fill('Ada Lovelace')
    await page.getByLabel('Email').fill('ada@example.com')
    await page.getByLabel('Phone').fill('+44 20 7946 0958')
    await page.getByRole('button', { name: 'Request a consultation' }).click()
    t.match(await page.locator('#enquiry-error').textContent(), /tick the box/, 'not sent without consent')
    t.equal(await app.leads.count(), 0)

    await page.getByLabel(/I agree/).check()
    const sent = page.waitForResponse((res) => res.url() === `${base}/scripts/enquiry_backend.php`)
    await page.getByRole('button', { name: 'Request a consultation' }).click()
    t.equal((await sent).status(), 200)
    await page.locator('#enquiry-status', { hasText: 'Thank you' }).waitFor()
    t.equal(await app.leads.count(), 1, 'the lead is stored')
    await page.locator('#enquiry').screenshot({ path: join(artifacts, 'project-page-enquiry.png') })

    await page.goto(`${base}/projects`)
    t.ok((await page.locator('.card').count()) >= 20, 'the index shows the catalogue')
    await page.screenshot({ path: join(artifacts, 'projects-index.png') })
    t.same(errors, [], 'no page errors (CSP included)')
  })

  t.test('a browser at /, at an unknown path and at /favicon.ico gets pages, not JSON', async (t) => {
    const { base } = await live(t)
    const browser = await launchBrowser()
    t.teardown(() => browser.close())
    const page = await browser.newPage({ viewport: { width: 1100, height: 700 } })
    const errors: string[] = []
    page.on('pageerror', (err) => errors.push(err.message))
    page.on('console', (msg) => msg.type() === 'error' && !/404/.test(msg.text()) && errors.push(msg.text()))

    const home = await page.goto(`${base}/`)
    t.equal(home?.status(), 200)
    t.equal(new URL(page.url()).pathname, '/docs', 'the home page is the API reference')
    await page.locator('.swagger-ui .info .title').waitFor()
    await page.screenshot({ path: join(artifacts, 'home.png') })

    const missing = await page.goto(`${base}/no/such/page`)
    t.equal(missing?.status(), 404)
    t.match(missing?.headers()['content-type'], /^text\/html/, 'an HTML 404')
    t.equal(await page.locator('h1').textContent(), 'There is nothing here')
    t.equal(await page.locator('main code').textContent(), '/no/such/page', 'it names the path')
    await page.screenshot({ path: join(artifacts, 'not-found.png') })
    await page.getByRole('link', { name: "The studio's projects" }).click()
    await page.waitForURL(`${base}/projects`)
    t.ok((await page.locator('.card').count()) >= 20, 'its link leads to the projects')

    const icon = await page.goto(`${base}/favicon.ico`)
    t.equal(icon?.status(), 200)
    t.match(icon?.headers()['content-type'], /^image\//, 'the favicon is an image')
    t.same(errors, [], 'no page errors (CSP included)')
  })

  t.test('/docs on a narrow window: the Servers box shows its whole server line', async (t) => {
    const { base } = await live(t)
    const browser = await launchBrowser()
    t.teardown(() => browser.close())
    for (const width of [800, 1100]) {
      const page = await browser.newPage({ viewport: { width, height: 700 } })
      await page.goto(`${base}/docs/`)
      const select = page.locator('.swagger-ui .servers select')
      await select.waitFor()
      // The selected line's width in the box's own font, against the room the box gives it (its
      // width less its padding; the arrow sits in the right padding): Chromium cuts a longer line.
      const fit = await select.evaluate((el: HTMLSelectElement) => {
        const style = getComputedStyle(el)
        const context = document.createElement('canvas').getContext('2d') as CanvasRenderingContext2D
        context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`
        const text = el.options[el.selectedIndex]?.text ?? ''
        const room = el.clientWidth - Number.parseFloat(style.paddingLeft) - Number.parseFloat(style.paddingRight)
        return { text, needs: Math.ceil(context.measureText(text).width), room: Math.floor(room) }
      })
      t.match(fit.text, /^http:\/\/\S+ - The Studio API/, `${width} px: the server line is the served URL and its description`)
      t.ok(fit.needs <= fit.room, `${width} px: it needs ${fit.needs} px of the ${fit.room} px it has`)
      await page.close()
    }
  })
}
