// The leads feature: intake (normalisation, idempotency), the group-commit writer, the hourly
// sweep of expired idempotency keys and the log, over the leads repository. Handlers and MCP
// tools use `app.leads`; nothing else touches the leads tables but features/privacy, which reads and
// erases a person's leads (access and erasure requests, retention) and records where an erased lead
// stood in the log (read here, so that paging past it goes on). Other features that must act on
// every stored lead (lead delivery) register a listener with `app.leads.onStore`, which runs in
// the leads' own transaction: this feature never names them.
import fp from 'fastify-plugin'
import { idempotencyCutoff, LeadIntake, type LeadReceipt, leadRules, type Submitter } from './intake.js'
import { type LeadLogEntry, logEntry } from './log-entry.js'
import { type LeadFields, type LeadListener, LeadsRepository, type StoredBatch } from './repository.js'
import { LeadWriter } from './writer.js'

export interface Leads {
  /** Stores a lead validated against the spec's Lead schema; resolves after the commit. */
  submit(lead: LeadFields, by: Submitter, idempotencyKey?: string): Promise<LeadReceipt>
  /** Log entries after a commit position, oldest first, with their positions. */
  page(afterSeq: number, limit: number): Promise<{ seq: number; entry: LeadLogEntry }[]>
  /** The newest log entries first, at most `limit`, received at or after `since` (RFC 3339) when given. */
  recent(since: string | undefined, limit: number): Promise<LeadLogEntry[]>
  /** The commit position of a lead, if it exists, or the one it had if it was erased (the reader's cursor goes on). */
  seqOf(id: string): Promise<number | undefined>
  /** How many leads are stored. */
  count(): Promise<number>
  /** Adds a listener told about every batch of leads as it is stored (see LeadListener). */
  onStore(listener: LeadListener): void
}

declare module 'fastify' {
  interface FastifyInstance {
    leads: Leads
  }
}

const IDEMPOTENCY_SWEEP_MS = 60 * 60 * 1000

export default fp(
  async (app) => {
    const listeners: LeadListener[] = []
    const repository = new LeadsRepository(app.store, listeners)
    const afterCommit = ({ stored, results }: StoredBatch) => {
      app.metrics.leadsStored.inc(stored.length)
      for (const [i, listener] of listeners.entries()) {
        try {
          listener.afterCommit?.(stored, results[i] ?? [])
        } catch (err) {
          // The leads are committed and acknowledged whatever a listener does after the fact.
          app.log.error({ err: { message: (err as Error).message } }, 'a lead listener failed after the commit')
        }
      }
    }
    const writer = new LeadWriter(repository, idempotencyCutoff, afterCommit)
    const intake = new LeadIntake(repository, writer, undefined, leadRules(app.spec.schema('LeadFields')))

    // Idempotency keys live 24 h; expired ones are swept hourly (and are ignored until then).
    const sweep = setInterval(() => {
      repository
        .sweepIdempotency(idempotencyCutoff())
        .then((n) => n > 0 && app.log.info({ removed: n }, 'expired idempotency keys swept'))
        .catch((err: Error) => app.log.warn({ err: { message: err.message } }, 'idempotency sweep failed; retrying next hour'))
    }, IDEMPOTENCY_SWEEP_MS)
    sweep.unref()

    // onClose hooks run in reverse order of registration: this one runs before the store's, so
    // every acknowledged lead is committed before the connection closes.
    app.addHook('onClose', async () => {
      clearInterval(sweep)
      await writer.flush()
    })

    app.decorate('leads', {
      submit: (lead, by, key) => intake.submit(lead, by, key),
      page: async (afterSeq, limit) => (await repository.page(afterSeq, limit)).map((r) => ({ seq: r.seq, entry: logEntry(r) })),
      recent: async (since, limit) =>
        (await repository.recent(since === undefined ? undefined : new Date(since).toISOString(), limit)).map(logEntry),
      seqOf: (id) => repository.seqOf(id),
      count: () => repository.count(),
      onStore: (listener) => {
        listeners.push(listener)
      },
    } satisfies Leads)
  },
  { name: 'leads', fastify: '5.x', dependencies: ['spec', 'store', 'metrics'] },
)

export type { LeadReceipt, Submitter } from './intake.js'
export type { LeadLogEntry } from './log-entry.js'
export type { LeadFields, LeadListener, NewLead } from './repository.js'
