// Lead delivery: every stored lead becomes a `lead.received` event in the outbox, written in the
// lead's own transaction (a listener of the leads feature), and this instance's delivery worker
// sends it, signed, to the studio's endpoints, at least once. Endpoints are managed by the CLI
// (scripts/webhooks.ts) over the same tables; any number of instances share the outbox.
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { leadReceived, subscribableTypes } from './events.js'
import { deliveryMetrics } from './metrics.js'
import { WebhooksRepository, writeEvents } from './repository.js'
import { send } from './sender.js'
import { DeliveryWorker } from './worker.js'

/** Polls at least every second, and as often as the shortest retry delay (tests shorten it). */
export const pollInterval = (config: Pick<Config, 'webhooksFirstRetryMs'>): number =>
  Math.max(50, Math.min(1000, config.webhooksFirstRetryMs))

export default fp<{ config: Config }>(
  async (app, { config }) => {
    subscribableTypes(app.spec) // the spec must declare lead.received: refuse to start otherwise
    const repo = new WebhooksRepository(app.store.db, app.store.dialect)
    const worker = new DeliveryWorker({
      repo,
      send: (url, headers, body, signal) => send(url, headers, body, { allowPrivate: config.webhooksAllowPrivate, signal }),
      policy: { firstRetryMs: config.webhooksFirstRetryMs, maxAttempts: config.webhooksMaxAttempts },
      metrics: deliveryMetrics(app.metrics.registry, () => repo.pendingCount()),
      log: app.log,
      owner: `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
      pollMs: pollInterval(config),
    })

    // The outbox: the events commit or roll back with their leads; the worker looks at once.
    app.leads.onStore({
      inTransaction: (trx, stored) => writeEvents(trx, stored.map(leadReceived)),
      afterCommit: () => worker.wake(),
    })

    app.addHook('onReady', async () => worker.start())
    // Runs before the leads plugin's close (reverse order of registration): leads committed after
    // this stay pending for the next start or another instance, never lost.
    app.addHook('onClose', async () => worker.stop())
  },
  { name: 'webhooks', fastify: '5.x', dependencies: ['spec', 'store', 'metrics', 'leads'] },
)
