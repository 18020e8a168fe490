// The protected resources this server issues tokens for (RFC 8707 resource indicators, RFC 9728
// resource identifiers): the REST API, named by its base URL, and the MCP endpoint. A token's
// `aud` lists the ones it was requested for, and each resource accepts only tokens naming it.

/** Where the MCP endpoint is served; its resource identifier is the base URL plus this path. */
export const MCP_PATH = '/mcp'

export interface Resources {
  /** The REST API: the default audience, so clients that name no resource keep working. */
  api: string
  /** The MCP endpoint. */
  mcp: string
  all: readonly string[]
}

export function protectedResources(publicBaseUrl: string): Resources {
  const api = publicBaseUrl
  const mcp = `${publicBaseUrl}${MCP_PATH}`
  return { api, mcp, all: [api, mcp] }
}
