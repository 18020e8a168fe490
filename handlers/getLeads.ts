// GET /leads.json: the leads log, oldest first; paged with limit/after, else streamed whole
// in bounded pages so memory does not grow with the log.
import { Readable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import { AppError } from '../plugins/errors/codes.js'
import type { LeadRow, LeadsRepository } from '../plugins/store/leads.js'
import type { Deps, HandlerModule } from './deps.js'

type Query = NonNullable<operations['getLeads']['parameters']['query']>
type Entry = operations['getLeads']['responses'][200]['content']['application/json'][number]

/** Rows per storage page while streaming: small chunks stay in V8's young generation. */
const STREAM_PAGE = 250

export function toEntry(row: LeadRow): Entry {
  return { id: row.id, name: row.name, email: row.email, phone: row.phone, received_at: row.received_at, client_id: row.client_id }
}

/**
 * The log after `afterSeq` as JSON chunks, one per storage page. Between pages it gives the event
 * loop a turn, so a long log (SQLite answers synchronously) does not hold up other requests.
 */
export async function* streamLog(leads: LeadsRepository, afterSeq: number): AsyncGenerator<Buffer> {
  yield Buffer.from('[')
  let cursor = afterSeq
  let first = true
  for (;;) {
    const rows = await leads.page(cursor, STREAM_PAGE)
    if (rows.length === 0) break
    let chunk = ''
    for (const row of rows) {
      chunk += (first ? '' : ',') + JSON.stringify(toEntry(row))
      first = false
    }
    yield Buffer.from(chunk)
    cursor = rows[rows.length - 1]?.seq ?? cursor
    if (rows.length < STREAM_PAGE) break
    await nextTurn()
  }
  yield Buffer.from(']')
}

export const getLeads: HandlerModule = {
  handler: ({ store, config }: Deps) =>
    async function getLeads(request: FastifyRequest<{ Querystring: Query }>, reply: FastifyReply) {
      const { limit, after } = request.query
      reply.header('cache-control', 'no-store')
      let afterSeq = 0
      if (after !== undefined) {
        const seq = await store.leads.seqOf(after)
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
        // highWaterMark 1: at most one page waits in the stream's buffer (memory flat in the log size).
        return reply
          .type('application/json; charset=utf-8')
          .send(Readable.from(streamLog(store.leads, afterSeq), { objectMode: true, highWaterMark: 1 }))
      }
      const rows = await store.leads.page(afterSeq, limit + 1)
      const page = rows.slice(0, limit)
      const last = page[page.length - 1]
      if (rows.length > limit && last) {
        reply.header('link', `<${config.publicBaseUrl}/leads.json?limit=${limit}&after=${encodeURIComponent(last.id)}>; rel="next"`)
      }
      return page.map(toEntry)
    },
}
