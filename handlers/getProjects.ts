// GET /project_metadata.json: the catalogue, from memory, with ETag / If-None-Match.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../plugins/errors/codes.js'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

/** RFC 9110 §13.1.2: weak comparison; `*` matches any current representation. */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false
  if (header.trim() === '*') return true
  const strip = (t: string) => t.trim().replace(/^W\//, '')
  return header.split(',').some((t) => strip(t) === etag)
}

export const getProjects: HandlerModule<Deps> = {
  handler: ({ catalogue }: Deps) =>
    async function getProjects(request: FastifyRequest, reply: FastifyReply) {
      const view = catalogue.current()
      if (!view) {
        throw new AppError(
          'not_found',
          'The studio has not published a project catalogue yet.',
          'try again later; an operator publishes it with `npm run catalogue -- import`',
        )
      }
      reply.header('etag', view.etag).header('cache-control', 'private, max-age=60')
      if (ifNoneMatchHits(request.headers['if-none-match'], view.etag)) return reply.code(304).send()
      // Pre-serialized once per catalogue version: no per-request serialization.
      return reply.type('application/json; charset=utf-8').send(view.body)
    },
}
