// GET /.well-known/jwks.json: the public keys that verify our access tokens.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

export const getJwks: HandlerModule<Deps> = {
  handler: ({ auth }: Deps) =>
    async function getJwks(_request: FastifyRequest, reply: FastifyReply) {
      reply.header('cache-control', 'public, max-age=300')
      return auth.jwks()
    },
}
