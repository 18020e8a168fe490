// A load balancer for the proxy tests: a real reverse proxy (node:http) in front of an API
// process, which appends the address of whoever connected to it to X-Forwarded-For, as nginx's
// $proxy_add_x_forwarded_for and cloud balancers do, and reaches the API from an address of its
// own (127.0.0.9), the one the API is told to trust. Clients connect from addresses of their own
// too (all of 127.0.0.0/8 is loopback on Linux), so "two real clients behind the balancer" are two
// real source addresses, and a forged X-Forwarded-For is whatever a client writes before the
// balancer's hop.
import { Agent, request as httpRequest, createServer as httpServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/** The balancer's own address: what TRUST_PROXY names in the tests. */
export const BALANCER_ADDRESS = '127.0.0.9'

export interface Balancer {
  url: string
  port: number
}

/** A reverse proxy on 127.0.0.1 forwarding every request to `target` from BALANCER_ADDRESS. */
export async function startBalancer(t: Test, target: { port: number }): Promise<Balancer> {
  const agent = new Agent({ keepAlive: true, localAddress: BALANCER_ADDRESS })
  const server = httpServer((req, res) => {
    const seen = req.headers['x-forwarded-for']
    const peer = req.socket.remoteAddress ?? ''
    // Hop-by-hop headers stay with their hop (RFC 9110 §7.6.1), as in any proxy.
    const { connection: _c, 'keep-alive': _k, ...forwarded } = req.headers
    const headers: IncomingHttpHeaders = { ...forwarded, 'x-forwarded-for': seen ? `${seen}, ${peer}` : peer }
    const upstream = httpRequest({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers, agent }, (answer) => {
      const { connection: _c, 'keep-alive': _k, ...back } = answer.headers
      res.writeHead(answer.statusCode ?? 502, back)
      answer.pipe(res)
    })
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        agent.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  )
  const port = (server.address() as AddressInfo).port
  return { url: `http://127.0.0.1:${port}`, port }
}

export interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
}

/** One HTTP request from a given local address (a client of its own), with a fresh connection. */
export function requestFrom(
  localAddress: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const target = new URL(url)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers: { ...options.headers, ...(options.body !== undefined && { 'content-length': String(Buffer.byteLength(options.body)) }) },
        localAddress,
        agent: false,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}
