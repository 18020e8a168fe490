// Endpoints for the tests, added the way the CLI adds them (features/webhooks/admin.ts), on the
// storage of a test app, with a receiver that knows their secrets.
import type { FastifyInstance } from 'fastify'
import { addEndpoint, type WebhookAdmin } from '../../features/webhooks/admin.js'
import { subscribableTypes } from '../../features/webhooks/events.js'
import { WebhooksRepository } from '../../features/webhooks/repository.js'
import type { Receiver } from './receiver.js'

export function adminOf(app: FastifyInstance, allowPrivate = true): WebhookAdmin {
  return { repo: new WebhooksRepository(app.store.db, app.store.dialect), allowPrivate, eventTypes: subscribableTypes(app.spec) }
}

/** An endpoint at `path` of the receiver, its secret known to the receiver. */
export async function endpointAt(app: FastifyInstance, rx: Receiver, path = '/hook'): Promise<{ id: string; secret: string }> {
  const added = await addEndpoint(adminOf(app), { url: `${rx.url}${path}` })
  rx.secrets.set(path, [added.secret])
  return { id: added.endpoint_id, secret: added.secret }
}

/** Waits until storage says so (the worker records an outcome after the receiver has answered). */
export async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/**
 * The app's metrics once `line` is in them. The worker counts an outcome after storage has
 * acknowledged its record, and on SQLite that record is visible to the main thread's reads a
 * moment before the writer thread's answer arrives: a test that waited for the record waits for
 * the count too.
 */
export async function metricsWith(app: FastifyInstance, line: RegExp): Promise<string> {
  let text = ''
  await until(`metrics with ${line}`, async () => {
    text = await app.metrics.registry.metrics()
    return line.test(text)
  })
  return text
}
