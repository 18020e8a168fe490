// The two MCP App views in a real browser against the real server: the app listens on a port, a
// real MCP client with no credentials at all (as a host that adds just the URL) reads the ui://
// resources and calls the real tools, and each view is hosted in
// headless Chromium (sandboxed srcdoc iframe, the spec's CSP plus the resource's `_meta.ui.csp`)
// with its tools/call wired to that client. Asserted: what the views render from the real
// results, the messages user actions send to the host (tools/call reaching the server,
// ui/update-model-context, ui/message, ui/open-link, size-changed), readable text in both themes
// (WCAG contrast ≥ 4.5), screenshots in test-artifacts/, and no console errors.
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { McpUiResourceCsp, McpUiTheme } from '@modelcontextprotocol/ext-apps/app-bridge'
import type { Browser, Frame } from 'playwright-core'
import t, { type Test } from 'tap'
import { projectRoot } from '../../../config.js'
import { leadOf, testApp, tokenFor } from '../../helpers/app.js'
import { freePort, requirePart } from '../../helpers/processes.js'
import { CHROMIUM_PATH, type HostHandle, launchBrowser, launchHost } from './harness.ts'

type Structured = Record<string, unknown>
const artifacts = join(projectRoot, 'test-artifacts')

/** A view as the MCP client reads it: the HTML and its declared CSP. */
interface ViewResource {
  html: string
  csp: McpUiResourceCsp
}

interface PlaybookResult {
  studio: { name: string; tagline: string }
  phases: { id: string; name: string }[]
  styles: {
    name: string
    projects: { id: string; title: string; image: { url: string; alt: string } | null; page_url: string }[]
  }[]
}
interface Estimate {
  currency: string
  low: number
  high: number
  input: { area_sqm: number; rooms: number; service_level: string; style: string | null; city: string | null }
}

// ---------------------------------------------------------------------------------------------
// In the page: WCAG 2.x contrast of key elements, and what theme the view applied.
// ---------------------------------------------------------------------------------------------

interface Contrast {
  selector: string
  text: string
  color: string
  background: string
  ratio: number
}

/**
 * Contrast ratio of the text colour of the first visible, enabled element of each selector
 * against its effective background (its own and its ancestors' background colours composited,
 * over white/black by theme). Colours are read through a canvas pixel, so any CSS colour syntax
 * (rgb(), color(srgb …), light-dark() resolved values) is handled the same way.
 */
function contrastsInPage(selectors: string[]): Contrast[] {
  const canvas = document.createElement('canvas')
  canvas.width = 1
  canvas.height = 1
  const ctx = canvas.getContext('2d', { willReadFrequently: true })
  if (!ctx) throw new Error('no 2d context')
  const rgba = (css: string): [number, number, number, number] => {
    ctx.clearRect(0, 0, 1, 1)
    ctx.fillStyle = '#000'
    ctx.fillStyle = css
    ctx.fillRect(0, 0, 1, 1)
    const d = ctx.getImageData(0, 0, 1, 1).data
    return [d[0] ?? 0, d[1] ?? 0, d[2] ?? 0, (d[3] ?? 0) / 255]
  }
  const over = (top: number[], bottom: number[]): number[] => {
    const a = top[3] ?? 1
    return [0, 1, 2].map((i) => (top[i] ?? 0) * a + (bottom[i] ?? 0) * (1 - a))
  }
  const channel = (c: number): number => {
    const s = c / 255
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4
  }
  const luminance = (c: number[]): number => 0.2126 * channel(c[0] ?? 0) + 0.7152 * channel(c[1] ?? 0) + 0.0722 * channel(c[2] ?? 0)
  const ratio = (a: number[], b: number[]): number => {
    const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
    return (hi + 0.05) / (lo + 0.05)
  }
  const dark = document.documentElement.dataset.theme === 'dark'
  const out: Contrast[] = []
  for (const selector of selectors) {
    const textOf = (e: HTMLElement): string =>
      (e instanceof HTMLInputElement || e instanceof HTMLSelectElement ? e.value : (e.textContent ?? '')).trim()
    const el = Array.from(document.querySelectorAll<HTMLElement>(selector)).find(
      (e) => e.getClientRects().length > 0 && !(e as HTMLButtonElement).disabled && textOf(e) !== '',
    )
    if (!el) {
      out.push({ selector, text: '(no visible element)', color: '', background: '', ratio: 0 })
      continue
    }
    const layers: number[][] = []
    for (let n: Element | null = el; n; n = n.parentElement) layers.push(rgba(getComputedStyle(n).backgroundColor))
    let bg: number[] = dark ? [0, 0, 0, 1] : [255, 255, 255, 1]
    for (const layer of layers.reverse()) bg = [...over(layer, bg), 1]
    const fg = over(rgba(getComputedStyle(el).color), bg)
    out.push({
      selector,
      text: textOf(el).slice(0, 40),
      color: getComputedStyle(el).color,
      background: `rgb(${bg.slice(0, 3).map(Math.round).join(' ')})`,
      ratio: Math.round(ratio(fg, bg) * 100) / 100,
    })
  }
  return out
}

function themeInPage(): { dataTheme: string | undefined; colorScheme: string; bodyBackground: string } {
  return {
    dataTheme: document.documentElement.dataset.theme,
    colorScheme: getComputedStyle(document.documentElement).colorScheme,
    bodyBackground: getComputedStyle(document.body).backgroundColor,
  }
}

/** Both themes: the view applies the theme, key text is readable (≥ 4.5:1), a screenshot is saved. */
async function checkThemes(t: Test, host: HostHandle, name: string, selectors: string[]): Promise<void> {
  const backgrounds: string[] = []
  for (const theme of ['light', 'dark'] as McpUiTheme[]) {
    if (theme !== 'light') await host.setTheme(theme)
    const frame = await host.frame()
    // tsx (esbuild keepNames) wraps the page functions' inner arrows in __name(): give the page one.
    await frame.evaluate('globalThis.__name ??= (f) => f')
    await frame.waitForFunction((want) => document.documentElement.dataset.theme === want, theme)
    // Let the 160 ms colour transitions finish before reading computed colours.
    await host.page.waitForTimeout(300)
    const applied = await frame.evaluate(themeInPage)
    t.equal(applied.dataTheme, theme, `${name} ${theme}: data-theme`)
    t.equal(applied.colorScheme, theme, `${name} ${theme}: color-scheme`)
    backgrounds.push(applied.bodyBackground)
    for (const c of await frame.evaluate(contrastsInPage, selectors)) {
      t.ok(c.ratio >= 4.5, `${name} ${theme}: ${c.selector} contrast ${c.ratio} ≥ 4.5`, c)
    }
    await host.settle()
    await host.screenshot(join(artifacts, `${name}-${theme}.png`))
  }
  t.not(backgrounds[0], backgrounds[1], `${name}: the background changes with the theme`)
  await host.setTheme('light')
}

const rendered = (frame: Frame, selector: string) =>
  frame.$$eval(selector, (els) => els.filter((e) => e.getClientRects().length > 0).map((e) => (e.textContent ?? '').trim()))

// ---------------------------------------------------------------------------------------------

const chromium = existsSync(CHROMIUM_PATH)
if (requirePart(t, chromium, `Chromium (${CHROMIUM_PATH})`, "install Debian's chromium: apt-get install chromium")) {
  mkdirSync(artifacts, { recursive: true })

  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app, config } = await testApp(t, { port, publicBaseUrl: base })
  await app.listen({ host: '127.0.0.1', port })

  // No token: the apps, the tools they call and the consultation form are public.
  const client = new Client({ name: 'studio-api-browser-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
  t.teardown(() => client.close())

  const callTool = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> =>
    (await client.callTool({ name, arguments: args })) as CallToolResult

  async function readView(name: string): Promise<ViewResource> {
    const uri = `ui://${config.publicHost}/${name}`
    const read = await client.readResource({ uri })
    const content = read.contents[0] as { text?: string; _meta?: { ui?: { csp?: McpUiResourceCsp } } } | undefined
    if (!content?.text || !content._meta?.ui?.csp) throw new Error(`${uri}: no HTML or no _meta.ui.csp`)
    return { html: content.text, csp: content._meta.ui.csp }
  }

  const browser: Browser = await launchBrowser()
  t.teardown(() => browser.close())

  const eur = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR', maximumFractionDigits: 0 })
  const eurRange = (e: { low: number; high: number }) => `${eur.format(e.low)} – ${eur.format(e.high)}`

  t.test('pricing estimator: renders the real estimate, re-prices through the server, hands over', async (t) => {
    const view = await readView('pricing-estimator')
    t.same(view.csp, { resourceDomains: [base] }, 'the resource declares the API origin')
    const toolInput = { area_sqm: 120, style: 'Japandi', city: 'Lisbon' }
    const toolResult = await callTool('show_pricing_estimator', toolInput)
    t.notOk(toolResult.isError)
    const first = (toolResult.structuredContent as { estimate: Estimate }).estimate

    const host = await launchHost({
      browser,
      viewHtml: view.html,
      csp: view.csp,
      theme: 'light',
      toolName: 'show_pricing_estimator',
      toolInput,
      toolResult,
      callTool,
    })
    t.teardown(() => host.close())
    t.match(host.csp, `img-src 'self' data: ${base}`, 'the resource domain is in the view CSP')
    t.match(host.csp, "connect-src 'none'")

    const total = host.view.locator('#total')
    await total.waitFor()
    t.equal((await total.textContent())?.trim(), eurRange(first), 'the total is the tool result’s range in EUR')
    t.match(await host.view.locator('.est-summary').textContent(), /120 m².*Japandi style.*in Lisbon/)
    await host.waitForEvent('size-changed')
    t.ok(host.eventsOf('size-changed').length > 0, 'the view reported its size')

    await checkThemes(t, host, 'pricing-estimator', [
      'body',
      'h1',
      '.est-header .muted',
      '#total',
      '.est-summary',
      '#discuss',
      '.field-label',
      '.segment-input:checked + .segment-name',
      '.segment-input:not(:checked) + .segment-name',
      '.bar-label',
      '.bar-value',
      '.factors li',
      '.select',
      '.area-number',
      '.unit',
      '.field-hint',
      '.segment-desc',
      '.eyebrow',
      '.assumptions-title',
      '.assumptions li',
    ])

    // The area changes → estimate_price with the new arguments, answered by the server.
    let since = host.events.length
    await host.view.locator('#area-number').fill('200')
    const call = await host.waitForEvent('tools/call', { since, predicate: (e) => e.payload.name === 'estimate_price' })
    t.same(call.payload.arguments, {
      area_sqm: 200,
      rooms: first.input.rooms,
      service_level: first.input.service_level,
      style: 'Japandi',
      city: 'Lisbon',
    })
    const answered = await host.waitForEvent('tools/call:result', { since })
    const expected = await callTool('estimate_price', call.payload.arguments)
    t.same(answered.payload.result.structuredContent, expected.structuredContent, 'the real server answered the view')
    const bigger = expected.structuredContent as unknown as Estimate
    t.ok(bigger.high > first.high, 'a larger area costs more')
    await host.view
      .locator('#total')
      .filter({ hasText: eurRange(bigger) })
      .waitFor()
    t.pass('the rendered range is the new estimate')
    const context = await host.waitForEvent('ui/update-model-context', { since })
    t.ok(host.events.indexOf(context) > host.events.indexOf(answered), 'update-model-context follows the answer')
    t.match(context.payload.structuredContent, { view: 'pricing-estimator', estimate: { low: bigger.low, high: bigger.high } })
    t.match(context.payload.content[0].text, eurRange(bigger))

    // The service level changes → another call with it.
    since = host.events.length
    await host.view.locator('label[for="service-turnkey"]').click()
    const turnkey = await host.waitForEvent('tools/call', { since, predicate: (e) => e.payload.name === 'estimate_price' })
    t.match(turnkey.payload.arguments, { area_sqm: 200, service_level: 'turnkey' })
    const turnkeyResult = await host.waitForEvent('tools/call:result', { since })
    let priced = turnkeyResult.payload.result.structuredContent as Estimate
    t.equal(priced.input.service_level, 'turnkey')
    await host.view
      .locator('#total')
      .filter({ hasText: eurRange(priced) })
      .waitFor()
    await host.waitForEvent('ui/update-model-context', { since })

    // The slider, to its end: the largest area the model allows, priced and rendered without overflow.
    since = host.events.length
    await host.view.locator('#area-range').press('End')
    const largest = await host.waitForEvent('tools/call', { since, predicate: (e) => e.payload.name === 'estimate_price' })
    const options = (toolResult.structuredContent as { options: { area_sqm: { max: number } } }).options
    t.match(largest.payload.arguments, { area_sqm: options.area_sqm.max, service_level: 'turnkey' })
    const maxResult = await host.waitForEvent('tools/call:result', { since })
    const max = maxResult.payload.result.structuredContent as Estimate
    await host.view
      .locator('#total')
      .filter({ hasText: eurRange(max) })
      .waitFor()
    t.equal(await host.view.locator('#area-number').inputValue(), String(options.area_sqm.max))
    const overflowing = await (await host.frame()).evaluate(() =>
      Array.from(document.querySelectorAll<HTMLElement>('#total, .bar-value, .est-summary, .segment-name'))
        .filter((e) => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > document.documentElement.clientWidth)
        .map((e) => e.textContent),
    )
    t.same(overflowing, [], 'the largest figures fit')
    // Logarithmic over 10 – 10,000 m², the slider gives a typical flat room: 85 m² is not squeezed at its start.
    since = host.events.length
    await host.view.locator('#area-number').fill('85')
    const flat = await host.waitForEvent('tools/call:result', { since, predicate: (e) => e.payload.arguments.area_sqm === 85 })
    const position =
      Number(await host.view.locator('#area-range').inputValue()) / Number(await host.view.locator('#area-range').getAttribute('max'))
    t.ok(position > 0.2 && position < 0.5, `85 m² sits at ${position.toFixed(2)} of the slider track`)
    priced = flat.payload.result.structuredContent as Estimate
    await host.view
      .locator('#total')
      .filter({ hasText: eurRange(priced) })
      .waitFor()

    // "Discuss this estimate" → ui/message with the estimate.
    since = host.events.length
    await host.view.getByRole('button', { name: 'Discuss this estimate' }).click()
    const message = await host.waitForEvent('ui/message', { since })
    t.equal(message.payload.role, 'user')
    t.match(message.payload.content[0].text, eurRange(priced))
    await host.view.getByText('Sent to the conversation.').waitFor()
    await host.screenshot(join(artifacts, 'pricing-estimator-after.png'))

    t.same(host.errors, [], 'no console errors')
  })

  t.test('playbook: renders the real playbook, style chips, project links, consultation form', async (t) => {
    const view = await readView('playbook')
    t.same(view.csp, { resourceDomains: [base] })
    const toolResult = await callTool('show_playbook', {})
    t.notOk(toolResult.isError)
    const pb = toolResult.structuredContent as unknown as PlaybookResult

    const host = await launchHost({
      browser,
      viewHtml: view.html,
      csp: view.csp,
      theme: 'light',
      toolName: 'show_playbook',
      toolInput: {},
      toolResult,
      callTool,
    })
    t.teardown(() => host.close())
    const frame = await host.frame()
    await host.view.locator('.phase-name').first().waitFor()

    t.equal((await host.view.locator('h1').textContent())?.trim(), pb.studio.name)
    t.equal(pb.phases.length, 5, 'the playbook has 5 phases')
    t.same(
      await rendered(frame, '.phase-name'),
      pb.phases.map((p) => p.name),
      'the 5 phase names, in order',
    )
    t.same(
      await rendered(frame, 'article.style .style-name'),
      pb.styles.map((s) => s.name),
      'every signature style',
    )
    const titles = await rendered(frame, '.project-title')
    const expectedTitles = pb.styles.flatMap((s) => s.projects.map((p) => p.title))
    t.ok(expectedTitles.length > 0, 'the catalogue has signature projects')
    t.same(titles, expectedTitles, 'every signature project card, with its real title')

    // Images come from the API origin (allowed by the resource's CSP) and load.
    await host.settle()
    const images = await frame.$$eval('.project-media img', (imgs) =>
      (imgs as HTMLImageElement[]).map((i) => ({ src: i.currentSrc || i.src, w: i.naturalWidth, complete: i.complete })),
    )
    t.ok(images.length > 0, 'project images are shown')
    t.ok(
      images.every((i) => i.src.startsWith(`${base}/images/`)),
      'from the API',
    )
    t.ok(
      images.some((i) => i.w > 0),
      'at least one image loaded (naturalWidth > 0)',
    )
    t.same(
      images.filter((i) => i.w === 0),
      [],
      'no broken image',
    )
    t.equal(await frame.locator('.project-placeholder').count(), pb.styles.flatMap((s) => s.projects).filter((p) => !p.image).length)

    // The consultation form.
    for (const label of ['Full name', 'Email', 'Phone'])
      t.equal(await host.view.getByLabel(label, { exact: true }).count(), 1, `${label} field`)
    const consent = host.view.getByRole('checkbox', { name: /may contact me by email or phone/ })
    t.equal(await consent.count(), 1, 'the consent box')
    t.equal(await consent.isChecked(), false, 'not ticked for the person')
    t.equal(await host.view.getByRole('button', { name: 'Request consultation' }).count(), 1)

    await checkThemes(t, host, 'playbook', [
      'body',
      'h1',
      'h2',
      '.eyebrow',
      '.hero-tagline',
      '.section-head .muted',
      '.phase-marker',
      '.phase-name',
      '.duration',
      '.phase-summary',
      '.deliverables-label',
      '.deliverables li',
      '.chip[aria-pressed="true"]',
      '.chip[aria-pressed="false"]',
      '.style-name',
      '.style-intro .muted',
      '.project-title',
      '.swatch-label',
      '.project-meta',
      '.project-meta2',
      '.project-cta',
      '.field-label',
      '.field-label .optional',
      '#consult-submit',
      '.consult-intro .muted',
      '.consent-text',
    ])

    // A style chip → the other styles hide, the model is told.
    const style = pb.styles[1] ?? pb.styles[0]
    if (!style) throw new Error('no styles')
    let since = host.events.length
    await host.view.locator(`button.chip[data-chip="${style.name}"]`).click()
    const selected = await host.waitForEvent('ui/update-model-context', { since })
    t.same(selected.payload.structuredContent, {
      view: 'playbook',
      selected_style: style.name,
      location: null,
      project_ids: style.projects.map((p) => p.id),
    })
    t.match(selected.payload.content[0].text, `selected the "${style.name}" style`)
    t.same(await rendered(frame, 'article.style .style-name'), [style.name], 'only the selected style is shown')

    // A project card → ui/open-link with its page_url (a real page of the API).
    const project = style.projects[0]
    if (!project) throw new Error('no project')
    since = host.events.length
    await host.view.locator(`article.style[data-style="${style.name}"] a.project[data-project="${project.id}"]`).click()
    const link = await host.waitForEvent('ui/open-link', { since })
    t.equal(link.payload.url, project.page_url)
    const page = await fetch(project.page_url)
    t.equal(page.status, 200, 'the linked project page exists')
    t.match(await page.text(), project.title)

    // Without the consent box ticked the form does not send: it says why.
    const lead = leadOf(42)
    await host.view.getByLabel('Full name', { exact: true }).fill(lead.name)
    await host.view.getByLabel('Email', { exact: true }).fill('prospect42@example')
    await host.view.getByLabel('Phone', { exact: true }).fill(lead.phone)
    since = host.events.length
    await host.view.getByRole('button', { name: 'Request consultation' }).click()
    const consentError = host.view.locator('#f-consent-error')
    await consentError.filter({ hasText: /confirm that the studio may contact you/ }).waitFor()
    t.equal(await consent.getAttribute('aria-invalid'), 'true', 'the box is marked')
    t.equal(await consent.evaluate((e) => e === document.activeElement), true, 'and focused')
    await host.settle()
    t.same(
      host.events.slice(since).filter((e) => e.kind === 'tools/call'),
      [],
      'nothing sent without consent',
    )
    await host.screenshot(join(artifacts, 'playbook-form-consent.png'))

    // Ticked, with an email the view accepts but the server refuses → the server's error, nothing stored.
    await consent.check()
    t.equal(await consent.getAttribute('aria-invalid'), null, 'ticking clears the mark')
    since = host.events.length
    await host.view.getByRole('button', { name: 'Request consultation' }).click()
    const refused = await host.waitForEvent('tools/call:result', { since })
    t.equal(refused.payload.name, 'request_consultation')
    t.equal(refused.payload.result.isError, true)
    const error = host.view.locator('#consult-error')
    await error.waitFor()
    t.match(await error.textContent(), /`email` must be an email address/, 'the server’s hint is shown')
    t.equal(await app.leads.count(), 0, 'nothing stored')
    t.equal(host.eventsOf('ui/message').length, 0, 'no hand-over for a refused request')
    await host.screenshot(join(artifacts, 'playbook-form-error.png'))

    // Fixed → stored for real, receipt shown, hand-over message.
    await host.view.getByLabel('Email', { exact: true }).fill(lead.email)
    await host.view.getByLabel(/Anything we should know/).fill('A flat in Lisbon')
    since = host.events.length
    await host.view.getByRole('button', { name: 'Request consultation' }).click()
    const sent = await host.waitForEvent('tools/call', { since })
    t.same(sent.payload, { name: 'request_consultation', arguments: { ...lead, consent: true, note: 'A flat in Lisbon' } })
    const accepted = await host.waitForEvent('tools/call:result', { since })
    t.notOk(accepted.payload.result.isError)
    const receipt = accepted.payload.result.structuredContent as { id: string; received_at: string }
    t.equal(await app.leads.count(), 1, 'the lead is stored')
    const reader = await tokenFor(app, ['read:leads'])
    const leads = (await (
      await fetch(`${base}/leads.json`, { headers: { authorization: `Bearer ${reader.token}` } })
    ).json()) as Structured[]
    t.same(
      leads,
      [
        {
          id: receipt.id,
          ...lead,
          note: 'A flat in Lisbon',
          received_at: receipt.received_at,
          client_id: null,
          source: 'agent',
          // The person ticked the box: the consent is recorded with the request.
          consented_at: receipt.received_at,
        },
      ],
      'GET /leads.json has it, with its note, from no client (anonymous), from the agent, with the consent',
    )
    const handOver = await host.waitForEvent('ui/message', { since })
    t.ok(host.events.indexOf(handOver) > host.events.indexOf(accepted), 'the hand-over follows the stored request')
    t.match(handOver.payload.content[0].text, receipt.id)
    t.match(handOver.payload.content[0].text, `${style.name} style`)
    t.equal((await host.view.locator('.receipt-id').textContent())?.trim(), receipt.id, 'the receipt shows the reference')
    await host.settle()
    await host.screenshot(join(artifacts, 'playbook-receipt.png'))

    t.ok(host.eventsOf('size-changed').length > 0, 'the view reported its size')
    t.same(host.errors, [], 'no console errors')
  })
}
