// GET /.well-known/oauth-protected-resource: RFC 9728 metadata of the REST API as a protected
// resource, which its 401 challenges name (`resource_metadata`): where its tokens come from.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

export const getProtectedResourceMetadata: HandlerModule<Deps> = {
  handler: ({ auth }: Deps) =>
    async function getProtectedResourceMetadata(_request: FastifyRequest, reply: FastifyReply) {
      reply.header('cache-control', 'public, max-age=300')
      return auth.resourceMetadata
    },
}
