/**
 * Browser side of the MCP Apps test host.
 *
 * Loads a view (a built `text/html;profile=mcp-app` document) the way a
 * desktop-style MCP Apps host does: a sandboxed iframe (`sandbox="allow-scripts"`,
 * opaque origin, `srcdoc`) under the spec's CSP, connected through the ext-apps
 * `AppBridge` + `PostMessageTransport`.
 *
 * Everything the view asks of its host is forwarded to Node through functions
 * the harness exposes with `page.exposeFunction`:
 *   window.__hostEvent(kind, payload)     every message / lifecycle event
 *   window.__callTool(name, args)         answers the view's tools/call
 *
 * Node drives the host through `window.__mcpHost` (see HostControl).
 */

import type { CallToolResult } from '@modelcontextprotocol/client'
import {
  AppBridge,
  type McpUiHostContext,
  type McpUiResourceCsp,
  type McpUiStyles,
  type McpUiTheme,
  PostMessageTransport,
} from '@modelcontextprotocol/ext-apps/app-bridge'
import { buildViewCsp, injectCsp } from './csp.ts'

export interface HostStartConfig {
  viewHtml: string
  theme: McpUiTheme
  /** 'default' = built-in neutral host palette; 'none' = send no variables. */
  styleVariables: Partial<McpUiStyles> | 'default' | 'none'
  fontsCss?: string
  toolName: string
  toolInput?: Record<string, unknown>
  toolResult?: CallToolResult
  csp?: McpUiResourceCsp
  sandbox: string
  width: number
  locale: string
  timeZone: string
  prefersBorder: boolean
  openLinkResult: { isError?: boolean }
}

export interface HostControl {
  start(config: HostStartConfig): Promise<{ csp: string }>
  sendToolInput(args: Record<string, unknown>): Promise<void>
  sendToolResult(result: CallToolResult): Promise<void>
  sendToolCancelled(reason?: string): Promise<void>
  setTheme(theme: McpUiTheme): void
  setHostContext(patch: Partial<McpUiHostContext>): void
  teardown(): Promise<void>
}

declare global {
  interface Window {
    __hostEvent?: (kind: string, payload: unknown) => Promise<void>
    __callTool?: (name: string, args: Record<string, unknown>) => Promise<CallToolResult>
    __mcpHost: HostControl
  }
}

/** A neutral host palette (theme-aware through light-dark(), as the spec recommends). */
export const DEFAULT_HOST_STYLES: Partial<McpUiStyles> = {
  '--color-background-primary': 'light-dark(#ffffff, #171717)',
  '--color-background-secondary': 'light-dark(#f6f6f5, #212121)',
  '--color-background-tertiary': 'light-dark(#ececea, #2b2b2b)',
  '--color-background-danger': 'light-dark(#fdeeee, #3b1a1a)',
  '--color-background-success': 'light-dark(#edf7ef, #16291b)',
  '--color-text-primary': 'light-dark(#1a1a1a, #f2f2f2)',
  '--color-text-secondary': 'light-dark(#595959, #b0b0b0)',
  '--color-text-tertiary': 'light-dark(#767676, #8f8f8f)',
  '--color-text-danger': 'light-dark(#b42318, #ff9b91)',
  '--color-text-success': 'light-dark(#1f7a3a, #8fd6a2)',
  '--color-border-primary': 'light-dark(#d0d0ce, #474747)',
  '--color-border-secondary': 'light-dark(#e3e3e1, #363636)',
  '--color-border-tertiary': 'light-dark(#efefed, #2c2c2c)',
  '--color-ring-primary': 'light-dark(#2f6fec, #7aa7ff)',
  '--font-sans': 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
  '--border-radius-md': '10px',
  '--border-radius-lg': '14px',
}

const emit = (kind: string, payload: unknown): void => {
  void window.__hostEvent?.(kind, payload)?.catch(() => {})
}

let bridge: AppBridge | null = null
let iframe: HTMLIFrameElement | null = null
let initialized = false
let hostContext: McpUiHostContext = {}
let currentStyles: Partial<McpUiStyles> | undefined

function applyHostPageTheme(theme: McpUiTheme): void {
  document.documentElement.dataset.theme = theme
}

async function start(config: HostStartConfig): Promise<{ csp: string }> {
  if (bridge) throw new Error('host already started')
  document.documentElement.style.setProperty('--column-width', `${config.width}px`)
  applyHostPageTheme(config.theme)

  currentStyles =
    config.styleVariables === 'none' ? undefined : config.styleVariables === 'default' ? DEFAULT_HOST_STYLES : config.styleVariables
  const styles: McpUiHostContext['styles'] = {}
  if (currentStyles) styles.variables = currentStyles as McpUiStyles
  if (config.fontsCss) styles.css = { fonts: config.fontsCss }

  hostContext = {
    toolInfo: { tool: { name: config.toolName, inputSchema: { type: 'object' } } },
    theme: config.theme,
    ...(currentStyles || config.fontsCss ? { styles } : {}),
    displayMode: 'inline',
    availableDisplayModes: ['inline'],
    containerDimensions: { width: config.width },
    locale: config.locale,
    timeZone: config.timeZone,
    userAgent: 'studio-api-test-host/1.0',
    platform: 'web',
    deviceCapabilities: { touch: false, hover: true },
  }

  const container = document.getElementById('app-container')!
  container.classList.toggle('bordered', config.prefersBorder)

  iframe = document.createElement('iframe')
  iframe.id = 'mcp-app'
  iframe.title = `MCP App: ${config.toolName}`
  iframe.setAttribute('sandbox', config.sandbox)
  iframe.setAttribute('referrerpolicy', 'no-referrer')
  container.appendChild(iframe)

  bridge = new AppBridge(
    null,
    { name: 'studio-api-test-host', version: '1.0.0' },
    {
      openLinks: {},
      serverTools: {},
      logging: {},
      updateModelContext: { text: {}, structuredContent: {} },
      message: { text: {} },
      ...(config.csp ? { sandbox: { csp: config.csp } } : {}),
    },
    { hostContext },
  )

  bridge.oncalltool = async (params) => {
    const args = (params.arguments ?? {}) as Record<string, unknown>
    emit('tools/call', { name: params.name, arguments: args })
    if (!window.__callTool) throw new Error('window.__callTool is not exposed')
    try {
      const result = await window.__callTool(params.name, args)
      emit('tools/call:result', { name: params.name, arguments: args, result })
      return result
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      emit('tools/call:error', { name: params.name, arguments: args, message })
      throw err
    }
  }
  bridge.onupdatemodelcontext = async (params) => {
    emit('ui/update-model-context', params)
    return {}
  }
  bridge.onmessage = async (params) => {
    emit('ui/message', params)
    return {}
  }
  bridge.onopenlink = async (params) => {
    emit('ui/open-link', params)
    return config.openLinkResult
  }
  bridge.ondownloadfile = async (params) => {
    emit('ui/download-file', params)
    return {}
  }
  bridge.onrequestdisplaymode = async (params) => {
    emit('ui/request-display-mode', params)
    return { mode: 'inline' }
  }
  bridge.addEventListener('sizechange', (params) => {
    // Width is fixed by the host column; height follows the content.
    if (iframe && typeof params.height === 'number') iframe.style.height = `${params.height}px`
    emit('size-changed', params)
  })
  bridge.addEventListener('loggingmessage', (params) => emit('log', params))
  bridge.addEventListener('requestteardown', (params) => emit('request-teardown', params ?? {}))
  bridge.addEventListener('initialized', () => {
    initialized = true
    emit('initialized', { appInfo: bridge?.getAppVersion(), appCapabilities: bridge?.getAppCapabilities() })
    void (async () => {
      // Spec: tool-input after the View's initialize completes; tool-result after tool-input.
      if (config.toolInput !== undefined) await sendToolInput(config.toolInput)
      if (config.toolResult !== undefined) await sendToolResult(config.toolResult)
    })()
  })

  // Connect before loading the document so the View's ui/initialize is never missed.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!))

  const csp = buildViewCsp(config.csp)
  iframe.srcdoc = injectCsp(config.viewHtml, csp)
  emit('iframe-loading', { sandbox: config.sandbox, csp })
  return { csp }
}

function requireReady(): AppBridge {
  if (!bridge) throw new Error('host not started')
  if (!initialized) throw new Error('view has not sent ui/notifications/initialized yet')
  return bridge
}

async function sendToolInput(args: Record<string, unknown>): Promise<void> {
  await requireReady().sendToolInput({ arguments: args })
  emit('tool-input-sent', { arguments: args })
}

async function sendToolResult(result: CallToolResult): Promise<void> {
  await requireReady().sendToolResult(result)
  emit('tool-result-sent', result)
}

async function sendToolCancelled(reason?: string): Promise<void> {
  await requireReady().sendToolCancelled(reason ? { reason } : {})
  emit('tool-cancelled-sent', { reason })
}

function setHostContext(patch: Partial<McpUiHostContext>): void {
  hostContext = { ...hostContext, ...patch }
  if (patch.theme) applyHostPageTheme(patch.theme)
  requireReady().setHostContext(hostContext)
  emit('host-context-sent', patch)
}

function setTheme(theme: McpUiTheme): void {
  setHostContext({ theme })
}

async function teardown(): Promise<void> {
  const b = requireReady()
  await b.teardownResource({})
  emit('teardown-complete', {})
  iframe?.remove()
}

window.__mcpHost = { start, sendToolInput, sendToolResult, sendToolCancelled, setTheme, setHostContext, teardown }
emit('host-ready', {})
