// A real webhook receiver for the tests: a node:http server that verifies every delivery with the
// standardwebhooks library (the secrets it knows per path), validates the body against the spec's
// event schemas, and records it. Its answer is programmable (a status per path, or none at all:
// stop() closes the port, so connections are refused, and start() opens it again).
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { Webhook } from 'standardwebhooks'
import type { Test } from 'tap'
import { deref } from '../../plugins/spec/document.js'
import { spec } from './app.js'

export interface Delivery {
  path: string
  id: string
  timestamp: string
  signature: string
  body: string
  event: { type: string; timestamp: string; data: Record<string, unknown> & { id?: string } }
  /** Which of the path's secrets verified it (by index), none when forged or unknown. */
  verifiedBy: number[]
  /** The body matches the spec's schema for its event type. */
  valid: boolean
}

const ajv = new Ajv2020({ strict: false })
;(addFormats as unknown as (a: Ajv2020) => void)(ajv)
const webhooks = spec.document.webhooks as Record<
  string,
  { post: { requestBody: { content: { 'application/json': { schema: unknown } } } } }
>
const validators = new Map(
  Object.entries(webhooks).map(([type, item]) => [
    type,
    ajv.compile(deref(spec.document, item.post.requestBody.content['application/json'].schema) as object),
  ]),
)

function verify(secrets: string[], body: string, headers: IncomingMessage['headers']): number[] {
  const h = {
    'webhook-id': String(headers['webhook-id']),
    'webhook-timestamp': String(headers['webhook-timestamp']),
    'webhook-signature': String(headers['webhook-signature']),
  }
  return secrets.flatMap((secret, i) => {
    try {
      new Webhook(secret).verify(body, h)
      return [i]
    } catch {
      return []
    }
  })
}

export interface Receiver {
  url: string
  port: number
  /** The deliveries it accepted (answered 2xx). */
  deliveries: Delivery[]
  /** Every request it answered, with its answer. */
  attempts: (Delivery & { status: number })[]
  /** Secrets to verify with, per path (e.g. '/hook'). */
  secrets: Map<string, string[]>
  /** The status to answer a delivery with (default 200); a 3xx points elsewhere with Location. */
  answer: (path: string, delivery: Delivery) => number | Promise<number>
  /** Requests whose body has arrived, answered or not yet. */
  started: number
  /** The path of each of those requests, in the order they arrived. */
  requests: string[]
  /** Resolves when `until` holds of the deliveries (checked after each one), or rejects after `ms`. */
  waitFor(until: (deliveries: Delivery[]) => boolean, ms?: number): Promise<void>
  /** Closes the port (connections refused) and drops open connections. */
  stop(): Promise<void>
  start(): Promise<void>
}

export async function receiver(t: Test): Promise<Receiver> {
  const sockets = new Set<Socket>()
  const waiters = new Set<() => void>()
  let server: Server | undefined
  const rx: Receiver = {
    url: '',
    port: 0,
    deliveries: [],
    attempts: [],
    started: 0,
    requests: [],
    secrets: new Map(),
    answer: () => 200,
    waitFor(until, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!until(rx.deliveries)) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve()
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`the receiver did not get what was awaited within ${ms} ms (${rx.deliveries.length} deliveries)`))
        }, ms)
        waiters.add(check)
        check()
      })
    },
    async stop() {
      if (!server) return
      const s = server
      server = undefined
      for (const socket of sockets) socket.destroy()
      await new Promise((r) => s.close(r))
    },
    async start() {
      const s = createServer((req, res) => {
        const chunks: Buffer[] = []
        req.on('data', (c: Buffer) => chunks.push(c))
        req.on('end', async () => {
          rx.started++
          const body = Buffer.concat(chunks).toString('utf8')
          const path = (req.url ?? '/').split('?')[0] as string
          rx.requests.push(path)
          const event = JSON.parse(body) as Delivery['event']
          const delivery: Delivery = {
            path,
            id: String(req.headers['webhook-id']),
            timestamp: String(req.headers['webhook-timestamp']),
            signature: String(req.headers['webhook-signature']),
            body,
            event,
            verifiedBy: verify(rx.secrets.get(path) ?? [], body, req.headers),
            valid: validators.get(event.type)?.(event) === true,
          }
          const status = await rx.answer(path, delivery)
          if (res.destroyed) return
          rx.attempts.push({ ...delivery, status })
          if (status >= 200 && status < 300) rx.deliveries.push(delivery)
          const location = status >= 300 && status < 400 ? { location: `${rx.url}/elsewhere` } : {}
          res.writeHead(status, { 'content-type': 'text/plain', ...location }).end(status < 300 ? 'ok' : 'not now')
          for (const w of [...waiters]) w()
        })
      })
      s.on('connection', (socket) => {
        sockets.add(socket)
        socket.on('close', () => sockets.delete(socket))
      })
      await new Promise<void>((resolve) => s.listen(rx.port, '127.0.0.1', resolve))
      rx.port = (s.address() as AddressInfo).port
      rx.url = `http://127.0.0.1:${rx.port}`
      server = s
    },
  }
  await rx.start()
  t.teardown(() => rx.stop())
  return rx
}
