// tools/list with each tool's `securitySchemes` at the top level of its descriptor, where OpenAI's
// Apps SDK and SEP-1488 put it (the `_meta.securitySchemes` mirror, for hosts that read only
// `_meta`, is registered with the tool). The SDK's own listing keeps only the fields it knows, so
// this one replaces it, listing what the SDK registered.
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/server'
import type { JsonSchema } from '../../plugins/spec/document.js'
import type { SecurityScheme } from './access.js'

export interface ListedTool {
  name: string
  registered: RegisteredTool
  /** The arguments' JSON Schema as advertised (the one the SDK was given). */
  inputSchema: JsonSchema
  securitySchemes: SecurityScheme[]
}

export function listToolsWithSecurity(server: McpServer, tools: readonly ListedTool[]): void {
  server.server.removeRequestHandler('tools/list')
  server.server.setRequestHandler('tools/list', () => ({
    tools: tools
      .filter((t) => t.registered.enabled)
      .map(({ name, registered, inputSchema, securitySchemes }) => ({
        name,
        title: registered.title,
        description: registered.description,
        inputSchema: inputSchema as { type: 'object' },
        annotations: registered.annotations,
        _meta: registered._meta,
        securitySchemes,
      })),
  }))
}
