// Lead delivery: every stored lead becomes a `lead.received` event in the outbox, written in the
// lead's own transaction (a listener of the leads feature), with one delivery row per endpoint
// subscribed to it, and this instance's delivery worker makes each delivery, at least once,
// through the endpoint's channel: signed HTTP here, email from features/email (which adds its
// channel with `app.deliveries.addChannel`). Endpoints are managed by the CLI
// (scripts/webhooks.ts) over the same tables; any number of instances share the outbox.
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import type { EndpointKind } from '../../plugins/store/schema.js'
import type { Channel } from './channel.js'
import { leadReceived, subscribableTypes } from './events.js'
import { webhookChannel } from './http-channel.js'
import { DeliveryInstances, HEARTBEAT_MS } from './instances.js'
import { deliveryMetrics } from './metrics.js'
import { eventStatements } from './outbox.js'
import { WebhooksRepository } from './repository.js'
import { DeliveryWorker } from './worker.js'

export interface Deliveries {
  /** The outbox's endpoints, events and deliveries. */
  repo: WebhooksRepository
  /** Delivers the endpoints of this kind through `channel` (before the app is ready). */
  addChannel(kind: EndpointKind, channel: Channel): void
}

declare module 'fastify' {
  interface FastifyInstance {
    deliveries: Deliveries
  }
}

/** Polls at least every second, and as often as the shortest retry delay (tests shorten it). */
export const pollInterval = (config: Pick<Config, 'webhooksFirstRetryMs'>): number =>
  Math.max(50, Math.min(1000, config.webhooksFirstRetryMs))

export default fp<{ config: Config }>(
  async (app, { config }) => {
    subscribableTypes(app.spec) // the spec must declare lead.received: refuse to start otherwise
    const repo = new WebhooksRepository(app.store.db, app.store.dialect)
    const timeoutMs = config.webhooksTimeoutSeconds * 1000
    const channels = new Map<string, Channel>([['webhook', webhookChannel({ allowPrivate: config.webhooksAllowPrivate, timeoutMs })]])
    const owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
    const worker = new DeliveryWorker({
      repo,
      channels,
      policy: { firstRetryMs: config.webhooksFirstRetryMs, maxAttempts: config.webhooksMaxAttempts },
      metrics: deliveryMetrics(app.metrics.registry, () => repo.pendingCount()),
      log: app.log,
      owner,
      concurrency: config.webhooksConcurrency,
      timeoutMs,
      pollMs: pollInterval(config),
    })
    app.decorate('deliveries', {
      repo,
      addChannel: (kind, channel) => {
        channels.set(kind, channel)
      },
    } satisfies Deliveries)

    // The outbox: the events commit or roll back with their leads; the worker looks at once when
    // they made deliveries (with no endpoint subscribed there is nothing to look for: two lease
    // queries saved per commit). The last statement's row count is the deliveries made.
    app.leads.onStore({
      inTransaction: (leads, values) => eventStatements({ dialect: app.store.dialect, values }, leads.map(leadReceived), true),
      afterCommit: (_stored, results) => {
        if ((results.at(-1)?.rowCount ?? 0) > 0) worker.wake()
      },
    })

    // What the CLI reads to warn when an endpoint it adds would be held here (instances.ts).
    const instances = new DeliveryInstances(app.store.db)
    const startedAt = new Date().toISOString()
    const beat = () =>
      instances
        .beat(owner, config.webhooksAllowPrivate, startedAt)
        .catch((err: Error) => app.log.warn({ err: { message: err.message } }, 'could not record this instance for the CLI; retrying'))
    const heartbeat = setInterval(beat, HEARTBEAT_MS)
    heartbeat.unref()

    app.addHook('onReady', async () => {
      await warnAboutHeldEndpoints(app, repo, config)
      await beat()
      worker.start()
    })
    // Runs before the leads plugin's close (reverse order of registration): leads committed after
    // this stay pending for the next start or another instance, never lost.
    app.addHook('onClose', async () => {
      clearInterval(heartbeat)
      await worker.stop()
      await instances.remove(owner).catch(() => {})
    })
  },
  { name: 'webhooks', fastify: '5.x', dependencies: ['spec', 'store', 'metrics', 'leads'] },
)

/**
 * Says at start which endpoints this server's settings will hold back (so an operator reads it
 * before wondering why nothing arrives): http:// URLs without WEBHOOKS_ALLOW_PRIVATE. Storage
 * trouble here is the store's to report; the worker retries anyway.
 */
async function warnAboutHeldEndpoints(
  app: { log: { warn: (o: object, m: string) => void } },
  repo: WebhooksRepository,
  config: Config,
): Promise<void> {
  if (config.webhooksAllowPrivate) return
  const endpoints = await repo.listEndpoints().catch(() => [])
  const plain = endpoints.filter((e) => e.kind === 'webhook' && !e.disabled_at && e.url.startsWith('http:'))
  if (plain.length > 0) {
    app.log.warn(
      { endpoints: plain.map((e) => e.id) },
      'webhook endpoints with http:// URLs: their deliveries are held back until the server runs with WEBHOOKS_ALLOW_PRIVATE=true',
    )
  }
}
