// GET /.well-known/oauth-authorization-server: RFC 8414 metadata, for discovery by OAuth clients.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

export const getAuthorizationServerMetadata: HandlerModule<Deps> = {
  handler: ({ auth }: Deps) =>
    async function getAuthorizationServerMetadata(_request: FastifyRequest, reply: FastifyReply) {
      reply.header('cache-control', 'public, max-age=300')
      return auth.metadata
    },
}
