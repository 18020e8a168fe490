// The delivery metrics, on the app's registry (plugins/metrics): attempts by outcome, pending
// deliveries (read from storage at each scrape: the outbox every instance shares), and the lag
// from an event to its delivery.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

export type AttemptOutcome = 'delivered' | 'retry' | 'dead' | 'gone'

export interface DeliveryMetrics {
  attempted(outcome: AttemptOutcome): void
  /** Seconds from the event (the lead's commit) to its delivery. */
  delivered(lagSeconds: number): void
}

export function deliveryMetrics(registry: Registry, pending: () => Promise<number>): DeliveryMetrics {
  const attempts = new Counter({
    name: 'studio_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome: delivered (2xx), retry (failed, tried again later), dead (failed for the last time), gone (410: endpoint disabled).',
    labelNames: ['outcome'],
    registers: [registry],
  })
  new Gauge({
    name: 'studio_webhook_pending',
    help: 'Webhook deliveries not yet made (every instance shares them), including those waiting for a retry.',
    registers: [registry],
    async collect() {
      // A scrape while storage is unreachable keeps the last value rather than failing.
      await pending().then(
        (n) => this.set(n),
        () => {},
      )
    },
  })
  const lag = new Histogram({
    name: 'studio_webhook_delivery_lag_seconds',
    help: 'Time from an event (a lead stored) to its delivery to an endpoint.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400],
    registers: [registry],
  })
  return {
    attempted: (outcome) => attempts.inc({ outcome }),
    delivered: (seconds) => lag.observe(seconds),
  }
}
