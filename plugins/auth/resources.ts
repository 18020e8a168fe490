// The protected resources this server issues tokens for (RFC 8707 resource indicators, RFC 9728
// resource identifiers): the REST API, named by its base URL, and the MCP endpoint. A token's
// `aud` lists the ones it was requested for, and each resource accepts only tokens naming it.
// Each publishes its RFC 9728 metadata at the well-known path followed by its own path under the
// base URL (the REST API's at /.well-known/oauth-protected-resource, /mcp's at
// /.well-known/oauth-protected-resource/mcp), and names it in its 401 challenges.
import type { components } from '../../generated/openapi.js'

/** Where the MCP endpoint is served; its resource identifier is the base URL plus this path. */
export const MCP_PATH = '/mcp'

/** RFC 9728 §3: the well-known path of protected-resource metadata. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource'

export interface Resources {
  /** The REST API: the default audience, so clients that name no resource keep working. */
  api: string
  /** The MCP endpoint. */
  mcp: string
  all: readonly string[]
  /** Where each resource's metadata is served (absolute URLs). */
  metadataUrl: { api: string; mcp: string }
}

export function protectedResources(publicBaseUrl: string): Resources {
  const api = publicBaseUrl
  const mcp = `${publicBaseUrl}${MCP_PATH}`
  return {
    api,
    mcp,
    all: [api, mcp],
    metadataUrl: { api: `${publicBaseUrl}${RESOURCE_METADATA_PATH}`, mcp: `${publicBaseUrl}${RESOURCE_METADATA_PATH}${MCP_PATH}` },
  }
}

/** RFC 9728 §2 metadata of one resource: tokens for it come from this server, asked with resource=<resource>. */
export function resourceMetadata(
  publicBaseUrl: string,
  resource: string,
  scopes: readonly string[],
  name: string,
): components['schemas']['ProtectedResourceMetadata'] {
  return {
    resource,
    authorization_servers: [publicBaseUrl],
    scopes_supported: [...scopes],
    bearer_methods_supported: ['header'],
    resource_name: name,
    resource_documentation: `${publicBaseUrl}/docs`,
  }
}
