// The MCP endpoint: POST /mcp, Streamable HTTP, stateless (the SDK's createMcpHandler: 2026-07-28
// per-request traffic and the stateless 2025-era fallback), on the same Fastify server, keyed and
// rate-limited like every other route. Also the RFC 9728 metadata of /mcp and the project pages
// the playbook links to. Everything the tools need is read once here; a missing view build, a bad
// playbook or pricing model stops the start-up.
import type { FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import type { Deps } from '../../handlers/deps.js'
import { loadPricingModel } from '../../handlers/pricing/estimate.js'
import type { ToolDeps } from '../../handlers/tools/index.js'
import { loadPlaybook } from '../../handlers/tools/playbook.js'
import { ALL_SCOPES, parseBearer } from '../auth/rules.js'
import { bodyGuard } from '../routes.js'
import { loadSpec } from '../spec.js'
import {
  mcpResource,
  PROTECTED_RESOURCE_PATH,
  protectedResourceMetadata,
  requireToken,
  requireToolScopes,
  resourceMetadataUrl,
} from './auth.js'
import { registerProjectPages } from './project-page.js'
import type { ServerParts } from './server.js'
import { loadViews } from './views.js'

/** Default budget of /mcp per client (RATE_LIMITS="mcp=240/1 minute" overrides it). */
export const MCP_RATE_LIMIT = { max: 120, window: '1 minute' }
export const MCP_BODY_LIMIT = 64 * 1024

/**
 * Headers the SDK sees: the MCP ones (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*,
 * Mcp-Session-Id) and content negotiation; never credentials or cookies.
 */
const FORWARDED_HEADERS = new Set(['accept', 'content-type', 'last-event-id', 'user-agent'])
const forwarded = (name: string): boolean => FORWARDED_HEADERS.has(name) || name.startsWith('mcp-')

function toWebRequest(request: FastifyRequest, config: Config, signal: AbortSignal): Request {
  const headers = new Headers({ 'x-request-id': request.id })
  for (const [name, value] of Object.entries(request.headers)) {
    if (forwarded(name) && typeof value === 'string') headers.set(name, value)
  }
  // The body is handed over already parsed (parsedBody), so the Request carries none.
  return new Request(`${config.publicBaseUrl}${request.url}`, { method: request.method, headers, signal })
}

interface Loaded {
  handler: { fetch: (request: Request, options: object) => Promise<Response>; close: () => Promise<void> }
  checkScopes: (request: FastifyRequest) => Promise<void>
}

export default fp<{ config: Config; deps: Deps }>(
  async (app, { config, deps }) => {
    const views = loadViews(config)
    const toolDeps: ToolDeps = {
      config,
      catalogue: deps.catalogue,
      intake: deps.intake,
      pricing: loadPricingModel(),
      playbook: loadPlaybook(),
    }
    const studio = toolDeps.playbook.studio.name

    // The MCP SDK, zod and the tool modules load on first use (or right after listen), not at
    // start-up: they are a fifth of the start-up time, and only agents need them.
    let loading: Promise<Loaded> | undefined
    const load = (): Promise<Loaded> => {
      loading ??= (async () => {
        const [{ createMcpHandler }, { TOOLS, TOOL_SCOPES }, { buildMcpServer }] = await Promise.all([
          import('@modelcontextprotocol/server'),
          import('../../handlers/tools/index.js'),
          import('./server.js'),
        ])
        const parts: ServerParts = {
          deps: toolDeps,
          tools: TOOLS.map((tool) => ({ tool, inputSchema: tool.schema(toolDeps) })),
          views,
          serverInfo: { name: 'studio-api', version: loadSpec().info.version, title: `${studio} studio` },
          instructions:
            `Tools of ${studio}, an architecture and interior design studio. show_playbook presents how the studio works, its signature styles and projects; ` +
            'show_pricing_estimator and estimate_price give indicative budgets; list_projects lists the published projects (scope read:projects); ' +
            'request_consultation passes on the contact details of someone who asked to be contacted (scope write:leads).',
          logFailure: (tool, err) =>
            app.log.error({ err: { type: err.name, message: err.message, stack: err.stack }, tool }, 'mcp tool failed'),
        }
        const handler = createMcpHandler(
          (ctx) => {
            const clientId = ctx.authInfo?.clientId
            // The HTTP gate lets no request through without a verified client.
            if (clientId === undefined) throw new Error('MCP request without a verified client')
            return buildMcpServer(parts, { clientId })
          },
          {
            // Reporting only: the error's type, never its message (it may quote a request).
            onerror: (err) => app.log.warn({ err: { type: err.name } }, 'mcp request rejected or failed'),
          },
        )
        return { handler, checkScopes: requireToolScopes(config, TOOL_SCOPES) }
      })()
      return loading
    }
    app.addHook('onListen', async () => {
      setImmediate(() => load().catch((err: Error) => app.log.error({ err: { message: err.message } }, 'mcp failed to load')))
    })
    app.addHook('onClose', async () => {
      if (loading) await (await loading).handler.close()
    })

    const override = config.rateLimits.mcp ?? {}
    const metadataUrl = resourceMetadataUrl(config)
    const resource = new URL(mcpResource(config))

    app.post(
      '/mcp',
      {
        bodyLimit: MCP_BODY_LIMIT,
        config: { rateLimit: { max: override.max ?? MCP_RATE_LIMIT.max, timeWindow: override.window ?? MCP_RATE_LIMIT.window } },
        // After onRequest (caller resolved, rate limit applied), before the body is read.
        // JSON-RPC in a JSON body, refused otherwise like every operation's body (plugins/routes.ts).
        preParsing: [requireToken(config), bodyGuard(['application/json'])],
        preHandler: async (request) => (await load()).checkScopes(request),
      },
      async (request, reply) => {
        const principal = request.principal
        if (!principal) throw new Error('unreachable: /mcp without a principal')
        const aborter = new AbortController()
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) aborter.abort()
        })
        const { handler } = await load()
        const response = await handler.fetch(toWebRequest(request, config, aborter.signal), {
          parsedBody: request.body,
          authInfo: {
            token: parseBearer(request.headers.authorization) ?? '',
            clientId: principal.clientId,
            scopes: [...principal.scopes],
            resource,
            resourceMetadataUrl: metadataUrl,
          },
        })
        return reply.send(response)
      },
    )

    const metadata = JSON.stringify(protectedResourceMetadata(config, ALL_SCOPES, `${studio} studio MCP server`))
    app.get(PROTECTED_RESOURCE_PATH, async (_request, reply) =>
      reply
        .type('application/json; charset=utf-8')
        .header('cache-control', 'public, max-age=3600')
        .header('access-control-allow-origin', '*')
        .send(metadata),
    )

    registerProjectPages(app, config, studio)
  },
  { name: 'mcp', fastify: '5.x', dependencies: ['auth', 'rate-limit', 'errors', 'catalogue'] },
)
