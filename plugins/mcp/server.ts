// The MCP server of one request (the endpoint is stateless: one server per HTTP request, built
// from what was prepared once at start-up): the two app views as ui:// resources and the tools,
// bound to the verified caller.
import { RESOURCE_MIME_TYPE, registerAppResource, registerAppTool } from '@modelcontextprotocol/ext-apps/server'
import { type CallToolResult, McpServer, requireScopes } from '@modelcontextprotocol/server'
import type * as z from 'zod'
import type { Caller, ToolDeps, ToolModule } from '../../handlers/tools/index.js'
import { failure, ToolFailure } from '../../handlers/tools/types.js'
import { AppError, errorCodes } from '../errors/codes.js'
import { type View, viewMeta, viewUri } from './views.js'

export interface PreparedTool {
  tool: ToolModule
  inputSchema: z.ZodObject
}

export interface ServerParts {
  deps: ToolDeps
  tools: readonly PreparedTool[]
  views: readonly View[]
  serverInfo: { name: string; version: string; title: string }
  instructions: string
  /** Where unexpected tool failures are logged (type, message and stack: never arguments). */
  logFailure: (tool: string, err: Error) => void
}

/** A tool's outcome; a failure a caller can act on becomes a tool error, anything else a generic one. */
async function runTool(parts: ServerParts, tool: ToolModule, args: unknown, caller: Caller): Promise<CallToolResult> {
  try {
    return await tool.run(parts.deps, args as z.output<z.ZodObject>, caller)
  } catch (err) {
    if (err instanceof ToolFailure) return failure(err.message, err.hint)
    if (err instanceof AppError && (err.statusCode < 500 || err.code === 'service_unavailable')) return failure(err.message, err.hint)
    parts.logFailure(tool.name, err as Error)
    return failure(errorCodes.internal_error.message)
  }
}

export function buildMcpServer(parts: ServerParts, caller: Caller): McpServer {
  const server = new McpServer(parts.serverInfo, { instructions: parts.instructions })
  const ui = viewMeta(parts.deps.config)

  for (const view of parts.views) {
    registerAppResource(
      server,
      view.title,
      view.uri,
      { description: view.description, mimeType: RESOURCE_MIME_TYPE, _meta: { ui } },
      async () => ({
        contents: [{ uri: view.uri, mimeType: RESOURCE_MIME_TYPE, text: view.html, _meta: { ui } }],
      }),
    )
  }

  for (const { tool, inputSchema } of parts.tools) {
    const config = {
      title: tool.title,
      description: tool.description,
      inputSchema,
      annotations: tool.annotations,
      // Backstop of the HTTP gate (plugins/mcp/auth.ts), which answers first with the API's Error body.
      ...(tool.scope !== undefined && { scopeChallenge: requireScopes(tool.scope) }),
    }
    const callback = async (args: unknown) => runTool(parts, tool, args, caller)
    if (tool.ui) {
      const meta = {
        ...(tool.ui.view !== undefined && { resourceUri: viewUri(parts.deps.config, tool.ui.view) }),
        ...(tool.ui.visibility !== undefined && { visibility: tool.ui.visibility }),
      }
      registerAppTool(server, tool.name, { ...config, _meta: { ui: meta } }, callback)
    } else {
      server.registerTool(tool.name, config, callback)
    }
  }
  return server
}
