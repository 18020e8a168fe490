// /docs in a real browser under its Content-Security-Policy: Swagger UI renders the spec with no
// CSP violation, and another site cannot frame it.
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser } from 'playwright-core'
import t from 'tap'
import { spec, testApp } from '../../helpers/app.js'
import { freePort, requirePart } from '../../helpers/processes.js'
import { CHROMIUM_PATH, launchBrowser } from './harness.ts'

if (requirePart(t, existsSync(CHROMIUM_PATH), `Chromium (${CHROMIUM_PATH})`, "install Debian's chromium: apt-get install chromium")) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app } = await testApp(t, { port, publicBaseUrl: base })
  await app.listen({ host: '127.0.0.1', port })
  const browser: Browser = await launchBrowser()
  t.teardown(() => browser.close())

  t.test('Swagger UI renders under its CSP, with no violation', async (t) => {
    const page = await browser.newPage()
    t.teardown(() => page.close())
    const refused: string[] = []
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text())
    })
    await page.exposeFunction('reportViolation', (v: string) => refused.push(v))
    await page.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        ;(window as unknown as { reportViolation: (v: string) => void }).reportViolation(`${e.violatedDirective} ${e.blockedURI}`)
      })
    })
    const res = await page.goto(`${base}/docs`)
    t.equal(res?.status(), 200)
    await page.waitForSelector('.swagger-ui .info .title', { timeout: 20_000 })
    t.match(await page.textContent('.swagger-ui .info .title'), spec.title, 'the reference shows the spec')
    t.ok((await page.$$('.opblock')).length >= spec.operations.size, 'every operation is listed')
    t.same(refused, [], 'no CSP violation')
  })

  t.test('another site cannot frame /docs', async (t) => {
    // A page on another origin (another port) that frames /docs.
    const framer = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(`<!doctype html><iframe id="docs" src="${base}/docs"></iframe>`)
    })
    await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve))
    t.teardown(() => new Promise<void>((resolve) => framer.close(() => resolve())))
    const page = await browser.newPage()
    t.teardown(() => page.close())
    const said = page.waitForEvent('console', {
      predicate: (m) => /frame-ancestors|refused to (display|frame)/i.test(m.text()),
      timeout: 15_000,
    })
    await page.goto(`http://127.0.0.1:${(framer.address() as AddressInfo).port}/`)
    t.match((await said).text(), /frame-ancestors|X-Frame-Options/, 'the browser refuses to show it in the frame')
    const frame = page.frames().find((f) => f !== page.mainFrame())
    const framed = frame ? await frame.$('.swagger-ui').catch(() => null) : null
    t.equal(framed, null, 'the frame shows no Swagger UI')
  })
}
