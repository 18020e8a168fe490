// GET /leads.json: the leads log, oldest first; paged with limit/after, else streamed whole
// in bounded pages so memory does not grow with the log.
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Leads } from '../features/leads/index.js'
import type { operations } from '../generated/openapi.js'
import { AppError } from '../plugins/errors/codes.js'
import type { HandlerModule } from '../plugins/routes/index.js'
import type { Deps } from './deps.js'

type Query = NonNullable<operations['getLeads']['parameters']['query']>

/** Rows per storage page while streaming: small chunks stay in V8's young generation. */
const STREAM_PAGE = 250

type LogPage = Awaited<ReturnType<Leads['page']>>

/**
 * The log's entries as JSON, for the whole log and for a page alike: one serialisation, so both
 * write every entry's keys in the same order (logEntry's: `id` first, as the spec's examples).
 */
const entriesJson = (rows: LogPage): string => rows.map((row) => JSON.stringify(row.entry)).join(',')

/**
 * The log as JSON chunks, one per storage page, from its first page (read before the 200 is
 * sent, so that storage being unavailable is a 503, not a response cut short). Between pages it
 * gives the event loop a turn, so a long log (SQLite answers synchronously) does not hold up
 * other requests.
 */
export async function* streamLog(leads: Leads, firstPage: LogPage): AsyncGenerator<Buffer> {
  yield Buffer.from('[')
  let rows = firstPage
  let first = true
  while (rows.length > 0) {
    yield Buffer.from((first ? '' : ',') + entriesJson(rows))
    first = false
    const cursor = rows[rows.length - 1]?.seq
    if (rows.length < STREAM_PAGE || cursor === undefined) break
    await nextTurn()
    rows = await leads.page(cursor, STREAM_PAGE)
  }
  yield Buffer.from(']')
}

export const getLeads: HandlerModule<Deps> = {
  handler: ({ leads, config }: Deps) =>
    async function getLeads(request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) {
      const { limit, after } = request.query
      reply.header('cache-control', 'no-store')
      let afterSeq = 0
      if (after !== undefined) {
        const seq = await leads.seqOf(after)
        if (seq === undefined) {
          throw new AppError(
            'invalid_request',
            'The lead given as `after` is not in the log.',
            'pass the id of the last lead of the previous page as `after`, or omit it to start at the beginning',
          )
        }
        afterSeq = seq
      }
      if (limit === undefined) {
        const firstPage = await leads.page(afterSeq, STREAM_PAGE)
        // highWaterMark 1: at most one page waits in the stream's buffer (memory flat in the log size).
        return reply
          .type('application/json; charset=utf-8')
          .send(Readable.from(streamLog(leads, firstPage), { objectMode: true, highWaterMark: 1 }))
      }
      const rows = await leads.page(afterSeq, limit + 1)
      const page = rows.slice(0, limit)
      const last = page[page.length - 1]
      if (rows.length > limit && last) {
        reply.header('link', `<${config.publicBaseUrl}/leads.json?limit=${limit}&after=${encodeURIComponent(last.entry.id)}>; rel="next"`)
      }
      return reply.type('application/json; charset=utf-8').send(`[${entriesJson(page)}]`)
    },
}
