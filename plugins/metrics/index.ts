// Prometheus metrics: requests and latency per operation and status, rate-limit rejections,
// leads stored, tokens issued by outcome, and the process's own metrics. Labels are operationIds
// or route patterns, never raw URLs (bounded cardinality). They are served at /metrics on a
// listener of their own (listener.ts, started by server.ts), never on the API's port.
import fp from 'fastify-plugin'
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'

export interface Metrics {
  registry: Registry
  leadsStored: Counter
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
}

export default fp(
  async (app) => {
    const registry = new Registry()
    collectDefaultMetrics({ register: registry, prefix: 'studio_' })
    const requests = new Counter({
      name: 'studio_http_requests_total',
      help: 'Requests answered, by operation and status.',
      labelNames: ['operation', 'status'],
      registers: [registry],
    })
    const latency = new Histogram({
      name: 'studio_http_request_duration_seconds',
      help: 'Time to answer, by operation and status.',
      labelNames: ['operation', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    })
    const rejections = new Counter({
      name: 'studio_rate_limit_rejections_total',
      help: 'Requests refused with 429, by operation.',
      labelNames: ['operation'],
      registers: [registry],
    })
    const tokens = new Counter({
      name: 'studio_tokens_issued_total',
      help: 'Token requests, by outcome (issued, or the error code).',
      labelNames: ['outcome'],
      registers: [registry],
    })
    const leadsStored = new Counter({
      name: 'studio_leads_stored_total',
      help: 'Leads durably committed.',
      registers: [registry],
    })

    // Labelled children, made once per (operation, status). prom-client still validates and hashes
    // the labels on every observation (about 1 µs of a getProjects response, README Performance).
    const children = new Map<string, { count: ReturnType<Counter['labels']>; time: ReturnType<Histogram['labels']> }>()
    app.addHook('onResponse', (request, reply, done) => {
      const operation =
        (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId ?? request.routeOptions.url ?? 'unmatched'
      const status = String(reply.statusCode)
      const key = `${operation} ${status}`
      let child = children.get(key)
      if (!child) {
        child = { count: requests.labels(operation, status), time: latency.labels(operation, status) }
        children.set(key, child)
      }
      child.count.inc()
      child.time.observe(reply.elapsedTime / 1000)
      if (reply.statusCode === 429) rejections.inc({ operation })
      if (operation === 'issueToken') tokens.inc({ outcome: reply.statusCode === 200 ? 'issued' : (request.errorCode ?? status) })
      done()
    })

    app.decorate('metrics', { registry, leadsStored })
  },
  { name: 'metrics', fastify: '5.x' },
)
