// Leads stored as if they had been received at given times (retention, purge and erasure tests).
import type { NewLead } from '../../features/leads/repository.js'
import { LeadsRepository } from '../../features/leads/repository.js'
import { leadReceived } from '../../features/webhooks/events.js'
import { eventStatements } from '../../features/webhooks/outbox.js'
import type { Store } from '../../plugins/store/open.js'
import { leadOf } from './app.js'

/** A lead received at `receivedAt`, its address made from its id. */
export const leadAt = (id: string, receivedAt: string, n = 1): NewLead => ({
  id,
  fields: { ...leadOf(n), email: `${id}@example.com` },
  received_at: receivedAt,
  client_id: null,
  source: 'api',
})

/** Stores the leads with their outbox events, as the app's listener writes them. */
export async function storeAt(store: Store, leads: NewLead[]): Promise<void> {
  const repo = new LeadsRepository(store, [
    {
      inTransaction: (batch, values) => eventStatements({ dialect: store.dialect, values }, batch.map(leadReceived), true),
    },
  ])
  await repo.insertBatch(leads, new Map(), new Date().toISOString())
}
