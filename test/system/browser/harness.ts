/**
 * Node-side harness: hosts a built MCP App view in headless Chromium exactly
 * like an MCP Apps host would (ext-apps AppBridge, sandboxed srcdoc iframe,
 * spec CSP), and records everything the view asks of its host.
 *
 *   const host = await launchHost({
 *     viewHtml: await readFile('dist/ui/pricing-estimator.html', 'utf8'),
 *     theme: 'dark',
 *     toolName: 'show_pricing_estimator',
 *     toolInput: { area_sqm: 120 },
 *     toolResult,                              // CallToolResult of the tool
 *     callTool: (name, args) => client.callTool({ name, arguments: args }),
 *     onEvent: (e) => console.log(e.kind),
 *   });
 *   await host.view.getByRole('button', { name: 'More rooms' }).click();
 *   await host.waitForEvent('ui/update-model-context');
 *   await host.close();
 *
 * The host page (host.html + host.ts) is bundled once per process with Vite
 * and served from a throwaway http://127.0.0.1:<port>/ server (a loopback
 * origin, so views may load images from an API server on 127.0.0.1 without
 * tripping Chrome's Local/Private Network Access checks).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { CallToolResult } from '@modelcontextprotocol/client'
import type { McpUiHostContext, McpUiResourceCsp, McpUiStyles, McpUiTheme } from '@modelcontextprotocol/ext-apps/app-bridge'
import { type Browser, type BrowserContext, type ConsoleMessage, chromium, type Frame, type FrameLocator, type Page } from 'playwright-core'
import type { HostStartConfig } from './host.ts'

export type { CallToolResult }

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking']

/** Kinds emitted by the host page (see host.ts). */
export type HostEventKind =
  | 'host-ready'
  | 'iframe-loading'
  | 'initialized'
  | 'tool-input-sent'
  | 'tool-result-sent'
  | 'tool-cancelled-sent'
  | 'host-context-sent'
  | 'tools/call'
  | 'tools/call:result'
  | 'tools/call:error'
  | 'ui/update-model-context'
  | 'ui/message'
  | 'ui/open-link'
  | 'ui/download-file'
  | 'ui/request-display-mode'
  | 'size-changed'
  | 'log'
  | 'request-teardown'
  | 'teardown-complete'

export interface HostEvent {
  kind: HostEventKind | (string & {})
  // biome-ignore lint/suspicious/noExplicitAny: JSON payload of a host message, read freely in tests
  payload: any
  /** ms since launch */
  at: number
}

export type CallToolFn = (name: string, args: Record<string, unknown>) => Promise<CallToolResult> | CallToolResult

export interface LaunchHostOptions {
  /** The view document, e.g. contents of dist/ui/playbook.html. */
  viewHtml: string
  theme?: McpUiTheme
  /** Host style variables: 'default' (neutral host palette), 'none', or explicit values. */
  styleVariables?: Partial<McpUiStyles> | 'default' | 'none'
  /** Host font CSS (styles.css.fonts). */
  fontsCss?: string
  /** Name of the tool whose result this view renders (hostContext.toolInfo). */
  toolName?: string
  /** Sent as ui/notifications/tool-input once the view is initialized. */
  toolInput?: Record<string, unknown>
  /** Sent as ui/notifications/tool-result right after the tool input. Omit to send later via handle.sendToolResult(). */
  toolResult?: CallToolResult
  /** The UI resource's `_meta.ui.csp` (e.g. `{ resourceDomains: ['http://127.0.0.1:3000'] }`). Omitted → spec default CSP. */
  csp?: McpUiResourceCsp
  /** iframe sandbox attribute. Default 'allow-scripts'. */
  sandbox?: string
  /** Width of the chat column / iframe in px (hostContext.containerDimensions.width). Default 720. */
  width?: number
  viewport?: { width: number; height: number }
  locale?: string
  timeZone?: string
  prefersBorder?: boolean
  /** What ui/open-link answers. Default {} (success). */
  openLinkResult?: { isError?: boolean }
  /** Answers the view's tools/call. Default: an isError result naming the tool. */
  callTool?: CallToolFn
  /** Called for every host event, in order. */
  onEvent?: (event: HostEvent) => void
  /** Reuse a browser (e.g. one per test file); otherwise one is launched and closed with the handle. */
  browser?: Browser
  /** Resolve only after the tool result was delivered (default true when toolResult is given). */
  waitForResult?: boolean
  timeoutMs?: number
}

export interface HostHandle {
  browser: Browser
  context: BrowserContext
  page: Page
  /** Locator root inside the view iframe (use getByRole etc.). */
  view: FrameLocator
  /** The view's Frame (for evaluate). */
  frame(): Promise<Frame>
  /** The CSP applied to the view document. */
  csp: string
  events: HostEvent[]
  eventsOf(kind: string): HostEvent[]
  /** Resolves with the first event of `kind` (at or after index `since`) matching `predicate`. */
  waitForEvent(kind: string, opts?: { predicate?: (e: HostEvent) => boolean; since?: number; timeoutMs?: number }): Promise<HostEvent>
  /** All console messages from host page and view. */
  console: { type: string; text: string; url: string | undefined }[]
  /** Console errors + uncaught page errors (host and view). A clean run has none. */
  errors: string[]
  sendToolInput(args: Record<string, unknown>): Promise<void>
  sendToolResult(result: CallToolResult): Promise<void>
  sendToolCancelled(reason?: string): Promise<void>
  setTheme(theme: McpUiTheme): Promise<void>
  setHostContext(patch: Partial<McpUiHostContext>): Promise<void>
  /** Scrolls through the page so lazy images load, then waits for images + a stable size. */
  settle(timeoutMs?: number): Promise<void>
  screenshot(filePath: string): Promise<Buffer>
  teardown(): Promise<void>
  close(): Promise<void>
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS, headless: true })
}

let hostPagePromise: Promise<string> | null = null

/** Bundles host.html + host.ts into one HTML document (cached per process). */
export function buildHostPage(): Promise<string> {
  hostPagePromise ??= (async () => {
    const { build } = await import('vite')
    const { viteSingleFile } = await import('vite-plugin-singlefile')
    const root = dirname(fileURLToPath(import.meta.url))
    const outDir = await mkdtemp(join(tmpdir(), 'mcp-test-host-'))
    try {
      await build({
        configFile: false,
        root,
        logLevel: 'error',
        publicDir: false,
        plugins: [viteSingleFile()],
        build: {
          outDir,
          emptyOutDir: true,
          target: 'es2022',
          minify: false,
          reportCompressedSize: false,
          rollupOptions: { input: join(root, 'host.html') },
        },
      })
      return await readFile(join(outDir, 'host.html'), 'utf8')
    } finally {
      await rm(outDir, { recursive: true, force: true })
    }
  })()
  return hostPagePromise
}

export async function launchHost(opts: LaunchHostOptions): Promise<HostHandle> {
  const timeoutMs = opts.timeoutMs ?? 15_000
  const t0 = Date.now()
  const hostHtml = await buildHostPage()
  const ownBrowser = !opts.browser
  const browser = opts.browser ?? (await launchBrowser())
  const width = opts.width ?? 720
  const context = await browser.newContext({
    viewport: opts.viewport ?? { width: Math.max(width + 80, 800), height: 900 },
    deviceScaleFactor: 1,
    colorScheme: opts.theme ?? 'light',
    locale: opts.locale ?? 'en-US',
  })
  const page = await context.newPage()
  page.setDefaultTimeout(timeoutMs)

  const events: HostEvent[] = []
  const waiters = new Set<{ test: (e: HostEvent) => boolean; resolve: (e: HostEvent) => void }>()
  const consoleLog: HostHandle['console'] = []
  const errors: string[] = []

  const record = (kind: string, payload: unknown) => {
    const event: HostEvent = { kind, payload, at: Date.now() - t0 }
    events.push(event)
    try {
      opts.onEvent?.(event)
    } catch (err) {
      errors.push(`onEvent threw: ${String(err)}`)
    }
    for (const w of [...waiters]) {
      if (w.test(event)) {
        waiters.delete(w)
        w.resolve(event)
      }
    }
  }

  page.on('console', (msg: ConsoleMessage) => {
    const entry = { type: msg.type(), text: msg.text(), url: msg.location()?.url }
    consoleLog.push(entry)
    if (entry.type === 'error') errors.push(`console.error: ${entry.text}`)
  })
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`))

  await page.exposeFunction('__hostEvent', (kind: string, payload: unknown) => record(kind, payload))
  await page.exposeFunction('__callTool', async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    if (!opts.callTool) return { isError: true, content: [{ type: 'text', text: `No callTool handler for "${name}" in this test.` }] }
    return await opts.callTool(name, args)
  })
  const hostServer: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
    res.end(hostHtml)
  })
  await new Promise<void>((resolve) => hostServer.listen(0, '127.0.0.1', resolve))
  const hostOrigin = `http://127.0.0.1:${(hostServer.address() as AddressInfo).port}`

  const waitForEvent: HostHandle['waitForEvent'] = (kind, o = {}) => {
    const since = o.since ?? 0
    const test = (e: HostEvent) => e.kind === kind && (!o.predicate || o.predicate(e))
    const existing = events.slice(since).find(test)
    if (existing) return Promise.resolve(existing)
    return new Promise((resolve, reject) => {
      const waiter = {
        test,
        resolve: (e: HostEvent) => {
          clearTimeout(timer)
          resolve(e)
        },
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(
          new Error(
            `Timed out after ${o.timeoutMs ?? timeoutMs} ms waiting for host event "${kind}". Seen: ${events.map((e) => e.kind).join(', ')}${errors.length ? `\nErrors:\n${errors.join('\n')}` : ''}`,
          ),
        )
      }, o.timeoutMs ?? timeoutMs)
      waiters.add(waiter)
    })
  }

  const close = async () => {
    await context.close().catch(() => {})
    if (ownBrowser) await browser.close().catch(() => {})
    hostServer.closeAllConnections()
    await new Promise<void>((resolve) => hostServer.close(() => resolve()))
  }

  let csp = ''
  try {
    await page.goto(`${hostOrigin}/`)
    await page.waitForFunction(() => typeof window.__mcpHost?.start === 'function')
    const config: HostStartConfig = {
      viewHtml: opts.viewHtml,
      theme: opts.theme ?? 'light',
      styleVariables: opts.styleVariables ?? 'default',
      toolName: opts.toolName ?? 'tool',
      sandbox: opts.sandbox ?? 'allow-scripts',
      width,
      locale: opts.locale ?? 'en-US',
      timeZone: opts.timeZone ?? 'Europe/Paris',
      prefersBorder: opts.prefersBorder ?? true,
      openLinkResult: opts.openLinkResult ?? {},
      ...(opts.fontsCss !== undefined ? { fontsCss: opts.fontsCss } : {}),
      ...(opts.toolInput !== undefined ? { toolInput: opts.toolInput } : {}),
      ...(opts.toolResult !== undefined ? { toolResult: opts.toolResult } : {}),
      ...(opts.csp !== undefined ? { csp: opts.csp } : {}),
    }
    ;({ csp } = await page.evaluate((cfg) => window.__mcpHost.start(cfg), config))
    await waitForEvent('initialized')
    if (opts.toolResult !== undefined && (opts.waitForResult ?? true)) await waitForEvent('tool-result-sent')
  } catch (err) {
    await close()
    throw err
  }

  const view = page.frameLocator('#mcp-app')
  const frame = async (): Promise<Frame> => {
    const handle = await page.waitForSelector('#mcp-app', { state: 'attached' })
    const f = await handle.contentFrame()
    if (!f) throw new Error('view iframe has no frame')
    return f
  }

  const settle = async (ms = timeoutMs) => {
    const deadline = Date.now() + ms
    // Walk the host page so lazily-loaded images inside the iframe enter the viewport.
    const total = await page.evaluate(() => document.documentElement.scrollHeight)
    const step = Math.max(200, (page.viewportSize()?.height ?? 800) - 100)
    for (let y = 0; y <= total; y += step) {
      await page.evaluate((top) => window.scrollTo(0, top), y)
      await page.waitForTimeout(60)
    }
    const f = await frame()
    // Rendered images only: lazy images inside display:none never load. The view may still be
    // growing while the walk above runs (a slow machine), leaving lazy images below what was
    // walked: each image still pending is scrolled into view by itself (across the frame
    // boundary) until none is left, and a timeout names the ones that never loaded.
    const pending = () =>
      f.$$eval('img', (imgs) =>
        (imgs as HTMLImageElement[])
          .map((img, index) => ({ index, src: img.currentSrc || img.src, waiting: !img.complete && img.getClientRects().length > 0 }))
          .filter((i) => i.waiting),
      )
    for (let left = await pending(); left.length > 0; left = await pending()) {
      if (Date.now() > deadline)
        throw new Error(`settle: ${left.length} image(s) still loading after ${ms} ms: ${left.map((i) => i.src).join(', ')}`)
      const handles = await f.$$('img')
      for (const { index } of left) await handles[index]?.scrollIntoViewIfNeeded({ timeout: 1000 }).catch(() => {})
      await page.waitForTimeout(100)
    }
    await page.evaluate(() => window.scrollTo(0, 0))
    // Size is stable once no size-changed arrived for a few frames.
    let last = events.length
    for (;;) {
      await page.waitForTimeout(150)
      const sizeEvents = events.slice(last).filter((e) => e.kind === 'size-changed').length
      last = events.length
      if (sizeEvents === 0 || Date.now() > deadline) break
    }
  }

  return {
    browser,
    context,
    page,
    view,
    frame,
    csp,
    events,
    eventsOf: (kind) => events.filter((e) => e.kind === kind),
    waitForEvent,
    console: consoleLog,
    errors,
    sendToolInput: (args) => page.evaluate((a) => window.__mcpHost.sendToolInput(a), args),
    sendToolResult: (result) => page.evaluate((r) => window.__mcpHost.sendToolResult(r), result),
    sendToolCancelled: (reason) => page.evaluate((r) => window.__mcpHost.sendToolCancelled(r), reason),
    setTheme: async (theme) => {
      await page.emulateMedia({ colorScheme: theme })
      await page.evaluate((t) => window.__mcpHost.setTheme(t), theme)
    },
    setHostContext: async (patch) => {
      // Serializable by construction (JSON values); typed loosely to keep tsc's Serializable<> check shallow.
      const json = JSON.parse(JSON.stringify(patch)) as Record<string, unknown>
      await page.evaluate((p) => window.__mcpHost.setHostContext(p as Partial<McpUiHostContext>), json)
    },
    settle,
    screenshot: async (filePath) => {
      // Not `fullPage: true`: in headless Chromium that leaves the (out-of-process)
      // sandboxed iframe with stale input routing, so later clicks land on the host.
      // Growing the viewport to the page height and restoring it does not.
      const original = page.viewportSize() ?? { width: 800, height: 900 }
      const full = await page.evaluate(() => Math.ceil(document.documentElement.scrollHeight))
      await page.setViewportSize({ width: original.width, height: Math.max(original.height, full) })
      // The view is an out-of-process iframe with its own compositor: after the resize it paints
      // the newly visible area on its own frames, so wait for those too (else a tall view comes
      // out blank below the old viewport).
      for (const f of page.frames()) {
        await f.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())))).catch(() => {})
      }
      await page.waitForTimeout(100)
      const shot = await page.screenshot({ path: filePath })
      await page.setViewportSize(original)
      await page.evaluate(() => new Promise<void>((r) => requestAnimationFrame(() => requestAnimationFrame(() => r()))))
      return shot
    },
    teardown: () => page.evaluate(() => window.__mcpHost.teardown()),
    close,
  }
}
