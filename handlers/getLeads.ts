// GET /leads.json: the leads log, oldest first; paged with limit/after, else streamed whole
// in bounded pages so memory does not grow with the log.
import { Readable } from 'node:stream'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { operations } from '../generated/openapi.js'
import { AppError } from '../plugins/errors/codes.js'
import type { LeadRow, LeadsRepository } from '../plugins/store/leads.js'
import type { Deps, HandlerModule } from './deps.js'

type Query = NonNullable<operations['getLeads']['parameters']['query']>
type Entry = operations['getLeads']['responses'][200]['content']['application/json'][number]

const STREAM_PAGE = 1000

export function toEntry(row: LeadRow): Entry {
  return { id: row.id, name: row.name, email: row.email, phone: row.phone, received_at: row.received_at, client_id: row.client_id }
}

/** The log after `afterSeq` as JSON text chunks: one chunk per storage page. */
export async function* streamLog(leads: LeadsRepository, afterSeq: number): AsyncGenerator<string> {
  yield '['
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
    yield chunk
    cursor = rows[rows.length - 1]?.seq ?? cursor
    if (rows.length < STREAM_PAGE) break
  }
  yield ']'
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
        return reply.type('application/json; charset=utf-8').send(Readable.from(streamLog(store.leads, afterSeq)))
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
