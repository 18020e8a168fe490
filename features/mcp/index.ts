// The MCP endpoint: POST /mcp, Streamable HTTP, stateless (the SDK's createMcpHandler: 2026-07-28
// per-request traffic and the stateless 2025-era fallback), on the same Fastify server, keyed and
// rate-limited like every other route, and the RFC 9728 metadata of /mcp. Public: a request without
// credentials is an anonymous caller, and each tool call is authorized on its own (access.ts). The
// app hands the tools (handlers/tools/) and what they are given in; their argument schemas are
// compiled, their policies read and the views read once here; a missing view build stops the start-up.
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { clientAddress } from '../../lib/address.js'
import { compileStrict } from '../../lib/ajv.js'
import { parseBearer } from '../../plugins/auth/rules.js'
import { sendError } from '../../plugins/errors/answer.js'
import { AppError } from '../../plugins/errors/codes.js'
import { bodyGuard } from '../../plugins/routes/body-guard.js'
import { flattenObject } from '../../plugins/spec/document.js'
import { StorageLost } from '../../plugins/store/unavailable.js'
import { securitySchemes, type ToolPolicy } from './access.js'
import { type AnonymousSpend, anonymousBudget } from './anonymous.js'
import { mcpResource, PROTECTED_RESOURCE_PATH, protectedResourceMetadata, refuseBadToken, resourceMetadataUrl } from './auth.js'
import { refuseForeignOrigin } from './origin.js'
import type { PreparedTool, ServerParts, Session } from './server.js'
import type { Caller, ToolModule } from './tool.js'
import { refuseBatch, sdkRefusal } from './transport.js'
import { loadViews } from './views.js'

/** Default budget of /mcp per client or address (RATE_LIMITS="mcp=240/1 minute" overrides it). */
export const MCP_RATE_LIMIT = { max: 120, window: '1 minute' }

/** The budgets of /mcp by name (RATE_LIMITS overrides them): the endpoint's, and each anonymous tool's. */
export const mcpBudgetNames = (tools: readonly { anonymous?: { budget: { name: string } } }[]): string[] => [
  'mcp',
  ...tools.flatMap((tool) => (tool.anonymous ? [tool.anonymous.budget.name] : [])),
]
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

/**
 * The SDK's answer without its connection-level headers: its SSE answers say `Connection:
 * keep-alive`, which would keep open a connection the client asked to close (and that Node would
 * close). The connection is Node's and Fastify's to manage (timeouts, keep-alive, closing).
 */
function withoutHopByHop(response: Response): Response {
  if (!response.headers.has('connection') && !response.headers.has('keep-alive')) return response
  const headers = new Headers(response.headers)
  headers.delete('connection')
  headers.delete('keep-alive')
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers })
}

interface Loaded {
  handler: { fetch: (request: Request, options: object) => Promise<Response>; close: () => Promise<void> }
}

export interface McpOptions<D> {
  config: Config
  /** Every tool the server offers, in the order tools/list shows them (handlers/tools/). */
  tools: readonly ToolModule<D>[]
  /** What the tools are given. */
  deps: D
}

/** The caller of a request: the verified client of its token, or anonymous (keyed by address, as budgets count it). */
function callerOf(request: FastifyRequest): Caller {
  const p = request.principal
  return p
    ? { clientId: p.clientId, ...(p.person !== undefined && { person: p.person }), scopes: p.scopes, owner: `client:${p.clientId}` }
    : { clientId: null, scopes: new Set(), owner: `addr:${clientAddress(request)}` }
}

/** Each tool's arguments schema built and compiled, and its policy read, once. */
function prepare<D>(tools: readonly ToolModule<D>[], deps: D, scopes: readonly string[]): PreparedTool<D>[] {
  return tools.map((tool) => {
    if (tool.scope !== undefined && !scopes.includes(tool.scope)) {
      throw new Error(`tool ${tool.name} needs the scope ${tool.scope}, which the spec does not declare`)
    }
    // As hosts see it: the spec's own marker of non-HTTP shapes is no argument rule.
    const { 'x-internal': _internal, ...inputSchema } = flattenObject(tool.inputSchema(deps))
    const policy: ToolPolicy =
      tool.scope === undefined ? { anonymous: true } : { scope: tool.scope, anonymous: tool.anonymous?.allowed(deps) ?? false }
    return { tool, inputSchema, validate: compileStrict(inputSchema), policy, securitySchemes: securitySchemes(policy) }
  })
}

async function mcp<D>(app: FastifyInstance, { config, tools, deps }: McpOptions<D>): Promise<void> {
  const views = loadViews(config)
  const studio = app.playbook.studio.name
  const prepared = prepare(tools, deps, app.spec.scopes)
  // Declared whether or not anonymous calls are on, so RATE_LIMITS may name them either way.
  const anonymous = new Map<string, AnonymousSpend>(
    tools.flatMap((t) => (t.anonymous ? [[t.name, anonymousBudget(app, t.anonymous.budget)] as const] : [])),
  )
  const resource = mcpResource(config)
  const metadataUrl = resourceMetadataUrl(config)
  // What the SDK's server factory needs to know of each request, by the web Request handed to it.
  const sessions = new WeakMap<Request, Session>()

  // The MCP SDK loads on the first request to /mcp, not at start-up: only agents need it, and it
  // is a large part of the start-up time and of an idle server's memory (the bundle keeps it in
  // chunks of its own, scripts/bundle.mjs). That first request waits for it once (bench/run.ts
  // reports how long).
  let loading: Promise<Loaded> | undefined
  const load = (): Promise<Loaded> => {
    loading ??= (async () => {
      const [{ createMcpHandler }, { buildMcpServer }] = await Promise.all([import('@modelcontextprotocol/server'), import('./server.js')])
      const parts: ServerParts<D> = {
        deps,
        config,
        tools: prepared,
        views,
        serverInfo: { name: 'studio-api', version: app.spec.version, title: `${studio} studio` },
        instructions:
          `Tools of ${studio}, an architecture and interior design studio. show_playbook presents how the studio works, its signature styles and projects; ` +
          'show_pricing_estimator and estimate_price give indicative budgets; list_projects lists the published projects. These need no sign-in. ' +
          'request_consultation passes on the contact details of someone who asked to be contacted, only with their explicit consent; ' +
          "recent_leads reads the studio's latest leads and needs an access token with read:leads.",
        challenge: { resource, resourceMetadata: metadataUrl },
        logFailure: (tool, err) =>
          app.log.error({ err: { type: err.name, message: err.message, stack: err.stack }, tool }, 'mcp tool failed'),
        logProtectedCall: (tool, caller) =>
          app.log.info(
            { event: 'mcp.protected_call', tool, client_id: caller.clientId, staff_id: caller.person },
            'mcp protected tool called',
          ),
        // As the error handler does for HTTP: a lost database file was said once by the store.
        logUnavailable: (tool, err) => {
          if (!(err instanceof StorageLost))
            app.log.warn(
              { err: { type: err.name, message: err.message, code: (err as { code?: unknown }).code }, tool },
              'storage unavailable',
            )
        },
      }
      const handler = createMcpHandler(
        (ctx) => {
          const session = ctx.requestInfo && sessions.get(ctx.requestInfo)
          if (!session) throw new Error('MCP request without its session')
          return buildMcpServer(parts, session, ctx.era)
        },
        {
          // Reporting only: the error's type, never its message (it may quote a request).
          onerror: (err) => app.log.warn({ err: { type: err.name } }, 'mcp request rejected or failed'),
        },
      )
      return { handler }
    })()
    return loading
  }
  app.addHook('onClose', async () => {
    if (loading) await (await loading).handler.close()
  })

  const budget = app.budgets.resolve('mcp', MCP_RATE_LIMIT)

  app.post(
    '/mcp',
    {
      bodyLimit: MCP_BODY_LIMIT,
      // Tokens for /mcp only (RFC 8707 `aud`); errors in the JSON-RPC form MCP clients read, too.
      config: { rateLimit: { max: budget.max, timeWindow: budget.window }, tokenAudience: resource, jsonRpcErrors: true },
      // After onRequest (caller resolved, rate limit applied), before the body is read: the
      // origin, credentials that were sent, and a JSON body (plugins/routes/body-guard.ts).
      preParsing: [refuseForeignOrigin(config), refuseBadToken(config), bodyGuard(['application/json'])],
    },
    async (request, reply) => {
      refuseBatch(request.body)
      const aborter = new AbortController()
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) aborter.abort()
      })
      const { handler } = await load()
      const caller = callerOf(request)
      const web = toWebRequest(request, config, aborter.signal)
      sessions.set(web, {
        caller,
        spendAnonymous: async (tool) => (await anonymous.get(tool)?.(request)) ?? 0,
      })
      const principal = request.principal
      const authInfo = principal && {
        token: parseBearer(request.headers.authorization) ?? '',
        clientId: principal.clientId,
        scopes: [...principal.scopes],
        resource: new URL(resource),
        resourceMetadataUrl: metadataUrl,
      }
      const response = await handler.fetch(web, { parsedBody: request.body, ...(authInfo && { authInfo }) })
      // 499: the SDK saw the client go; nobody to answer.
      if (response.status < 400 || response.status === 499) return reply.send(withoutHopByHop(response))
      return sendError(request, reply, await sdkRefusal(response))
    },
  )

  // Any other method: 405 with Allow: POST (stateless: no GET stream, no session to DELETE), an
  // Error and a JSON-RPC error like every refusal of /mcp. OPTIONS stays CORS's preflight.
  app.route({
    method: ['GET', 'DELETE', 'PUT', 'PATCH'],
    url: '/mcp',
    config: { rateLimit: { max: budget.max, timeWindow: budget.window }, tokenAudience: resource, jsonRpcErrors: true },
    handler: async (request) => {
      throw new AppError(
        'method_not_allowed',
        `/mcp does not accept ${request.method}.`,
        'use POST: this MCP endpoint is stateless, with no GET stream and no session to delete',
        { allow: 'POST' },
      )
    },
  })

  const metadata = JSON.stringify(protectedResourceMetadata(config, app.spec.scopes, `${studio} studio MCP server`))
  app.get(PROTECTED_RESOURCE_PATH, async (_request, reply) =>
    reply
      .type('application/json; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .header('access-control-allow-origin', '*')
      .send(metadata),
  )
}

export default fp(mcp, { name: 'mcp', fastify: '5.x', dependencies: ['spec', 'auth', 'rate-limit', 'errors', 'playbook'] })
