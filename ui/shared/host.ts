/**
 * Shared glue between a view and its MCP Apps host (SEP-1865) built on the
 * ext-apps `App` class: host theme / style variables / fonts, container
 * dimensions, safe-area insets, locale, and small result helpers.
 */

import type { CallToolResult } from '@modelcontextprotocol/client'
import { App, applyDocumentTheme, applyHostFonts, applyHostStyleVariables, type McpUiHostContext } from '@modelcontextprotocol/ext-apps'

export type { CallToolResult }

export function createApp(name: string, version = '1.0.0'): App {
  // autoResize (default true) reports our content height to the host through
  // ui/notifications/size-changed whenever the document resizes.
  const app = new App({ name, version }, {}, { autoResize: true })
  app.addEventListener('hostcontextchanged', () => applyHostContext(app.getHostContext()))
  return app
}

/** Connects to the host (window.parent via PostMessageTransport) and applies its context. */
export async function connectApp(app: App): Promise<void> {
  await app.connect()
  applyHostContext(app.getHostContext())
}

let locale: string | undefined

export function hostLocale(): string | undefined {
  return locale
}

export function applyHostContext(ctx: McpUiHostContext | undefined): void {
  if (!ctx) return
  const root = document.documentElement
  if (ctx.theme === 'light' || ctx.theme === 'dark') applyDocumentTheme(ctx.theme)
  if (ctx.styles?.variables) applyHostStyleVariables(ctx.styles.variables)
  if (ctx.styles?.css?.fonts) applyHostFonts(ctx.styles.css.fonts)
  if (typeof ctx.locale === 'string' && ctx.locale) {
    locale = ctx.locale
    root.lang = ctx.locale
  }
  const inset = ctx.safeAreaInsets
  if (inset) {
    root.style.setProperty('--safe-top', `${inset.top}px`)
    root.style.setProperty('--safe-right', `${inset.right}px`)
    root.style.setProperty('--safe-bottom', `${inset.bottom}px`)
    root.style.setProperty('--safe-left', `${inset.left}px`)
  }
  const dims = ctx.containerDimensions
  if (dims) {
    // Fixed height: fill the container and scroll inside. Flexible: grow with
    // content up to maxHeight (the host resizes us from size-changed).
    if ('height' in dims) {
      root.style.height = '100vh'
      root.style.overflowY = 'auto'
    } else if ('maxHeight' in dims && dims.maxHeight) {
      root.style.maxHeight = `${dims.maxHeight}px`
      root.style.overflowY = 'auto'
    }
  }
  if (ctx.platform) root.dataset.platform = ctx.platform
  if (ctx.deviceCapabilities?.touch) root.dataset.touch = 'true'
}

/** The human-readable message carried by a tool result (text content blocks). */
export function resultText(result: Pick<CallToolResult, 'content'> | undefined): string {
  if (!result?.content) return ''
  return result.content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text' && typeof (c as { text?: unknown }).text === 'string')
    .map((c) => c.text.trim())
    .filter(Boolean)
    .join('\n')
}

/** Message to show for a failed tool result (isError: true). */
export function toolErrorMessage(result: Pick<CallToolResult, 'content'>, fallback: string): string {
  return resultText(result) || fallback
}

/** Message to show for a thrown error (transport failure, host refusal, timeout). */
export function thrownMessage(err: unknown, fallback: string): string {
  const msg = err instanceof Error ? err.message : typeof err === 'string' ? err : ''
  return msg ? `${fallback} (${msg})` : fallback
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * Fire-and-forget host requests that a host may legitimately not support
 * (update-model-context, open-link, message). Failures are reported to the
 * caller as `false`; nothing is thrown and nothing is logged as an error.
 */
export async function tryHost<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn()
  } catch {
    return undefined
  }
}

export function currencyFormatter(currency: string): Intl.NumberFormat {
  try {
    return new Intl.NumberFormat(hostLocale() ?? navigator.language ?? 'en', {
      style: 'currency',
      currency,
      maximumFractionDigits: 0,
    })
  } catch {
    return new Intl.NumberFormat('en', { style: 'currency', currency, maximumFractionDigits: 0 })
  }
}

export function numberFormatter(): Intl.NumberFormat {
  try {
    return new Intl.NumberFormat(hostLocale() ?? navigator.language ?? 'en', { maximumFractionDigits: 0 })
  } catch {
    return new Intl.NumberFormat('en', { maximumFractionDigits: 0 })
  }
}
