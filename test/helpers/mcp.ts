// The app listening on a real port, and the real MCP client connected to its /mcp endpoint.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import type { BuildOptions } from '../../app.js'
import type { Config } from '../../config.js'
import { testApp, tokenFor } from './app.js'
import { freePort } from './processes.js'

export type Mode = 'legacy' | 'auto'

export interface Live {
  app: FastifyInstance
  config: Config
  base: string
}

/** The app on a real port, its public base URL pointing at it. */
export async function live(t: Test, overrides: Partial<Config> = {}, options: BuildOptions = {}): Promise<Live> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app, config } = await testApp(t, { port, publicBaseUrl: base, ...overrides }, options)
  await app.listen({ host: '127.0.0.1', port })
  return { app, config, base }
}

/** A token for /mcp (RFC 8707 resource `${base}/mcp`) with the given scopes. */
export async function mcpToken(live: Live, scopes: string[]): Promise<string> {
  return (await tokenFor(live.app, scopes, `${live.base}/mcp`)).token
}

/** The real MCP client connected to /mcp, with a bearer token or (null) no credentials at all. */
export async function connect(t: Test, base: string, token: string | null, mode: Mode = 'legacy'): Promise<Client> {
  const client = new Client({ name: 'studio-api-test', version: '1.0.0' }, { versionNegotiation: { mode } })
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    ...(token !== null && { authProvider: { token: async () => token } }),
    onInsufficientScope: 'throw',
  })
  await client.connect(transport)
  t.teardown(() => client.close())
  return client
}

/** The text content of a tool result. */
export const textOf = (result: { content?: unknown }): string =>
  ((result.content ?? []) as { type: string; text?: string }[])
    .filter((c) => c.type === 'text')
    .map((c) => c.text ?? '')
    .join('\n')
