/**
 * Vite config for the MCP App views (ui://…/playbook, ui://…/pricing-estimator).
 *
 * Each view is bundled into ONE self-contained HTML file (JS + CSS inlined by
 * vite-plugin-singlefile) so the MCP server can return it verbatim from
 * `resources/read` with mimeType `text/html;profile=mcp-app`.
 *
 *   npx tsx ui/build.ts                                    # both views
 *   VIEW=playbook npx vite build -c ui/vite.config.ts      # one view
 *
 * Output: dist/ui/<view>.html
 */

import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type InlineConfig } from 'vite'
import { viteSingleFile } from 'vite-plugin-singlefile'

export const VIEWS = ['playbook', 'pricing-estimator'] as const
export type ViewName = (typeof VIEWS)[number]

const uiDir = path.dirname(fileURLToPath(import.meta.url))
export const outDir = path.resolve(uiDir, '..', 'dist', 'ui')

export function viewConfig(view: ViewName): InlineConfig {
  const root = path.join(uiDir, view)
  return {
    configFile: false,
    root,
    base: './',
    logLevel: 'warn',
    publicDir: false,
    plugins: [viteSingleFile({ removeViteModuleLoader: true })],
    build: {
      outDir,
      emptyOutDir: false,
      target: 'es2022',
      minify: true,
      cssMinify: true,
      reportCompressedSize: false,
      // Everything inline: no asset files may leave the HTML document.
      assetsInlineLimit: Number.MAX_SAFE_INTEGER,
      rollupOptions: { input: path.join(root, `${view}.html`) },
    },
  }
}

function viewFromEnv(): ViewName {
  const v = process.env.VIEW ?? 'playbook'
  if (!(VIEWS as readonly string[]).includes(v)) {
    throw new Error(`VIEW must be one of ${VIEWS.join(', ')} (got "${v}")`)
  }
  return v as ViewName
}

export default defineConfig(() => {
  const { configFile: _ignored, ...config } = viewConfig(viewFromEnv())
  return config
})
