// The handler of every spec operation, by operationId (fastify-openapi-glue binds them).
import type { HandlerModule } from './deps.js'
import { getAuthorizationServerMetadata } from './getAuthorizationServerMetadata.js'
import { getJwks } from './getJwks.js'
import { getLeads } from './getLeads.js'
import { getProjects } from './getProjects.js'
import { issueToken } from './issueToken.js'
import { submitLead } from './submitLead.js'

export const handlerModules: Record<string, HandlerModule> = {
  issueToken,
  getProjects,
  submitLead,
  getLeads,
  getJwks,
  getAuthorizationServerMetadata,
}

export type { Deps, FailureGuard, Handler, HandlerModule } from './deps.js'
