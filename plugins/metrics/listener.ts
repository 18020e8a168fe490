// The /metrics listener: a port of its own, apart from the API (METRICS_PORT, on METRICS_HOST,
// 127.0.0.1 by default), so the process's internals are shown to the scraper only, never to the
// API's public. A plain node:http server: /metrics, and /readyz with the details the API's public
// /readyz keeps to itself (storage engine and state, Redis, closing); nothing else, answers in
// the Error shape.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'
import { AppError } from '../errors/codes.js'

function sendError(res: import('node:http').ServerResponse, error: AppError): void {
  res.writeHead(error.statusCode, { 'content-type': 'application/json; charset=utf-8', ...error.headers })
  res.end(JSON.stringify(error.toBody()))
}

export interface MetricsListener {
  port: number
  close(): Promise<void>
}

/** Readiness with its details (the health plugin's `app.readiness`). */
export type ReadinessProbe = () => Promise<{ status: string }>

export async function listenMetrics(registry: Registry, host: string, port: number, readiness?: ReadinessProbe): Promise<MetricsListener> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    const paths = readiness ? '/metrics and /readyz' : '/metrics'
    if (path !== '/metrics' && (path !== '/readyz' || !readiness)) {
      sendError(res, new AppError('not_found', `There is nothing at ${path}.`, `this listener serves ${paths}`))
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendError(res, new AppError('method_not_allowed', `${path} does not accept ${req.method}.`, 'use GET', { allow: 'GET, HEAD' }))
    } else if (path === '/readyz' && readiness) {
      readiness().then(
        (details) => {
          res.writeHead(details.status === 'ready' ? 200 : 503, {
            'content-type': 'application/json; charset=utf-8',
            'cache-control': 'no-store',
          })
          res.end(req.method === 'HEAD' ? undefined : JSON.stringify(details))
        },
        () => sendError(res, new AppError('internal_error')),
      )
    } else {
      registry.metrics().then(
        (text) => {
          res.writeHead(200, { 'content-type': registry.contentType })
          res.end(req.method === 'HEAD' ? undefined : text)
        },
        () => sendError(res, new AppError('internal_error')),
      )
    }
  })
  // A scraper's requests are small and quick; nothing may hold this port open either.
  server.requestTimeout = 10_000
  server.headersTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
