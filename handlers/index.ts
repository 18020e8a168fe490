// The handler of every spec operation, by operationId (fastify-openapi-glue binds them; app.ts
// passes this registry to the routes plugin).
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'
import { getAuthorizationServerMetadata } from './getAuthorizationServerMetadata.js'
import { getJwks } from './getJwks.js'
import { getLeads } from './getLeads.js'
import { getProjects } from './getProjects.js'
import { getProtectedResourceMetadata } from './getProtectedResourceMetadata.js'
import { issueToken } from './issueToken.js'
import { submitLead } from './submitLead.js'

export const operationHandlers: Record<string, HandlerModule<Deps>> = {
  issueToken,
  getProjects,
  submitLead,
  getLeads,
  getJwks,
  getAuthorizationServerMetadata,
  getProtectedResourceMetadata,
}
