// Lead delivery, in process: a test app (its worker running) and a real receiver (node:http,
// verifying every delivery with the standardwebhooks library). The kill -9 and multi-instance
// cases run real processes in webhooks-faults.test.ts; the CLI in webhooks-cli.test.ts.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { buildApp } from '../../app.js'
import { createConfig } from '../../config.js'
import { addEndpoint, rotateSecret } from '../../features/webhooks/admin.js'
import { leadReceived } from '../../features/webhooks/events.js'
import { guardedLookup, isPublicAddress, UnsafeTarget } from '../../features/webhooks/safety.js'
import { retryDelay } from '../../features/webhooks/schedule.js'
import { DELIVERY_TIMEOUT_MS, MAX_RESPONSE_BYTES, send } from '../../features/webhooks/sender.js'
import { signingSecrets } from '../../features/webhooks/signing.js'
import { call, leadOf, storageConfig, testApp, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { connect, live } from '../helpers/mcp.js'
import { type Delivery, receiver } from '../helpers/receiver.js'
import { adminOf, endpointAt, metricsWith, until } from '../helpers/webhooks.js'

const SUBMIT = '/scripts/enquiry_backend.php'
const ALLOW = { webhooksAllowPrivate: true }

async function submitter(app: FastifyInstance) {
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  return {
    auth,
    async submit(lead: object, key?: string): Promise<string> {
      const res = await app.inject({
        method: 'POST',
        url: SUBMIT,
        headers: { ...auth, ...(key && { 'idempotency-key': key }) },
        payload: lead,
      })
      if (res.statusCode !== 200) throw new Error(`submit: ${res.statusCode} ${res.body}`)
      return res.json().id as string
    },
  }
}

const leadIds = (deliveries: Delivery[]) => deliveries.map((d) => d.event.data.id as string)

t.test('every stored lead reaches the endpoint, signed, as its log entry, in order; none other', async (t) => {
  const { app } = await testApp(t, ALLOW)
  const rx = await receiver(t)
  await endpointAt(app, rx)
  const { auth, submit } = await submitter(app)

  const ids: string[] = []
  for (let i = 0; i < 8; i++) ids.push(await submit(leadOf(i)))
  // A retry with the same Idempotency-Key stores nothing, so it announces nothing.
  t.equal(await submit(leadOf(7), 'same-key'), await submit(leadOf(7), 'same-key'), 'the retry got the first receipt')
  // Leads arriving together share one commit: the events commit with them.
  const together = await Promise.all([...Array.from({ length: 20 }, (_, i) => submit(leadOf(100 + i))), submit(leadOf(7), 'same-key')])
  await rx.waitFor((d) => d.length >= 29)

  const log = (await call(t, app, { url: '/leads.json', headers: auth })).json() as { id: string; received_at: string }[]
  t.equal(log.length, 29, '29 leads stored')
  t.equal(rx.deliveries.length, 29, 'one delivery per stored lead')
  t.same(leadIds(rx.deliveries).sort(), log.map((l) => l.id).sort(), 'each stored lead, and nothing else')
  t.same(leadIds(rx.deliveries).slice(0, 8), ids, 'in the order of the leads')
  t.ok(together.every((id) => leadIds(rx.deliveries).includes(id)))
  const byLead = new Map(log.map((l) => [l.id, l]))
  const wrong = (what: (d: Delivery) => boolean) => rx.deliveries.filter((d) => !what(d)).map((d) => d.id)
  t.same(
    wrong((d) => d.verifiedBy.length === 1 && d.verifiedBy[0] === 0),
    [],
    "every signature verifies with the endpoint's secret",
  )
  t.same(
    wrong((d) => d.valid),
    [],
    "every body matches the spec's LeadReceivedEvent",
  )
  const entryOf = (d: Delivery) => byLead.get(d.event.data.id as string)
  t.same(
    wrong(
      (d) => JSON.stringify(d.event) === JSON.stringify({ type: 'lead.received', timestamp: entryOf(d)?.received_at, data: entryOf(d) }),
    ),
    [],
    "every body is the lead's log entry, timed when it was received",
  )
  t.same(
    wrong((d) => /^msg_[0-9a-f]{32}$/.test(d.id)),
    [],
    'webhook-ids are msg_ ids',
  )
  t.equal(new Set(rx.deliveries.map((d) => d.id)).size, 29, 'one webhook-id per event')
  const events = await app.store.db.selectFrom('webhook_events').select('id').execute()
  t.equal(events.length, 29, 'the outbox holds an event per stored lead, none for the idempotent retries')
})

t.test('a lead from the MCP tool request_consultation is delivered like any other', async (t) => {
  const { app, base } = await live(t, ALLOW)
  const rx = await receiver(t)
  await endpointAt(app, rx)
  // A prospect through an agent: no token at all, with their consent; the note is a lead field.
  const client = await connect(t, base, null)
  const result = await client.callTool({
    name: 'request_consultation',
    arguments: { ...leadOf(5), note: 'a loft in Lisbon', consent: true },
  })
  t.notOk(result.isError)
  const receipt = result.structuredContent as { id: string; received_at: string }
  await rx.waitFor((d) => d.length === 1)
  const [delivery] = rx.deliveries as [Delivery]
  t.same(delivery.verifiedBy, [0])
  t.same(delivery.event.data, {
    id: receipt.id,
    ...leadOf(5),
    note: 'a loft in Lisbon',
    received_at: receipt.received_at,
    client_id: null,
    source: 'agent',
    consented_at: receipt.received_at,
  })
})

t.test('a receiver down for a while (503s, then refused connections) gets everything once back', async (t) => {
  const { app } = await testApp(t, { ...ALLOW, webhooksFirstRetryMs: 20, webhooksMaxAttempts: 20 })
  const rx = await receiver(t)
  const { id: endpointId } = await endpointAt(app, rx)
  const admin = adminOf(app)
  const { submit } = await submitter(app)
  rx.answer = () => 503
  const ids: string[] = []
  for (let i = 0; i < 5; i++) ids.push(await submit(leadOf(i)))
  await until('each event refused twice with 503', async () =>
    ids.every((id) => rx.attempts.filter((a) => a.event.data.id === id).length >= 2),
  )

  await rx.stop()
  const outcomes = async () =>
    Promise.all(
      (await app.store.db.selectFrom('webhook_deliveries').select('event_id').execute()).map((d) =>
        admin.repo.delivery(endpointId, d.event_id),
      ),
    )
  await until('each attempt meets a refused connection', async () =>
    (await outcomes()).every((d) => d?.last_outcome === 'connection refused'),
  )
  t.ok(
    (await outcomes()).every((d) => d?.status === 'pending'),
    'still pending while the receiver is away',
  )

  rx.answer = () => 200
  await rx.start()
  await rx.waitFor((d) => new Set(leadIds(d)).size === 5)
  t.same(new Set(leadIds(rx.deliveries)), new Set(ids), 'every lead delivered once the receiver is back')
  t.ok(
    rx.deliveries.every((d) => d.verifiedBy.length === 1 && d.valid),
    'signed and valid',
  )
  for (const id of ids) {
    const tries = rx.attempts.filter((a) => a.event.data.id === id)
    t.equal(new Set(tries.map((a) => a.id)).size, 1, `lead ${id.slice(0, 8)}: every attempt carries the same webhook-id`)
  }
  await until('recorded as delivered', async () => (await outcomes()).every((d) => d?.status === 'delivered'))
})

t.test('410 Gone disables the endpoint; its waiting delivery resumes when it is enabled again', async (t) => {
  const { app } = await testApp(t, ALLOW)
  const rx = await receiver(t)
  const gone = await endpointAt(app, rx, '/gone')
  await endpointAt(app, rx, '/fine')
  const admin = adminOf(app)
  const { submit } = await submitter(app)
  rx.answer = (path) => (path === '/gone' ? 410 : 200)
  const first = await submit(leadOf(1))
  await until('disabled', async () => (await admin.repo.findEndpoint(gone.id))?.disabled_at !== null)
  t.match(await admin.repo.findEndpoint(gone.id), { disabled_reason: 'answered 410 Gone' })
  t.equal(rx.attempts.filter((a) => a.path === '/gone').length, 1, 'asked once')
  const second = await submit(leadOf(2))
  await rx.waitFor((d) => d.filter((x) => x.path === '/fine').length === 2)
  t.equal(rx.attempts.filter((a) => a.path === '/gone').length, 1, 'a disabled endpoint is sent nothing more')
  t.match(await admin.repo.delivery(gone.id, (await eventOf(app, first)).id), { status: 'pending', last_outcome: '410' })
  t.equal(await admin.repo.delivery(gone.id, (await eventOf(app, second)).id), undefined, 'nor queued anything new')
  const metrics = await metricsWith(app, /outcome="gone"\} 1/)
  t.match(metrics, /studio_webhook_deliveries_total\{outcome="gone"\} 1/)

  rx.answer = () => 200
  await admin.repo.setDisabled(gone.id, null)
  await rx.waitFor((d) => d.some((x) => x.path === '/gone'))
  t.same(leadIds(rx.deliveries.filter((d) => d.path === '/gone')), [first], 'enabled again, the waiting delivery goes out')
})

async function eventOf(app: FastifyInstance, leadId: string) {
  const events = await app.store.db.selectFrom('webhook_events').selectAll().execute()
  const event = events.find((e) => (JSON.parse(e.payload) as { data: { id?: string } }).data.id === leadId)
  if (!event) throw new Error(`no event for lead ${leadId}`)
  return event
}

t.test('the last failed attempt leaves a dead letter; a replay sends it again with the same webhook-id', async (t) => {
  const { app } = await testApp(t, { ...ALLOW, webhooksFirstRetryMs: 20, webhooksMaxAttempts: 3 })
  const rx = await receiver(t)
  const { id: endpointId } = await endpointAt(app, rx)
  const admin = adminOf(app)
  const { submit } = await submitter(app)
  rx.answer = () => 500
  const leadId = await submit(leadOf(1))
  const event = await eventOf(app, leadId)
  await until('dead', async () => (await admin.repo.delivery(endpointId, event.id))?.status === 'dead')
  t.equal(rx.attempts.length, 3, 'WEBHOOKS_MAX_ATTEMPTS attempts')
  t.match(await admin.repo.deadLetters(10), [{ event_id: event.id, endpoint_id: endpointId, attempts: 3, last_outcome: '500' }])
  t.match(await admin.repo.status(), [{ id: endpointId, pending: 0, delivered: 0, dead: 1 }])
  const metrics = await metricsWith(app, /outcome="dead"\} 1/)
  t.match(metrics, /studio_webhook_deliveries_total\{outcome="retry"\} 2/)
  t.match(metrics, /studio_webhook_deliveries_total\{outcome="dead"\} 1/)

  rx.answer = () => 200
  t.equal(await admin.repo.replay({ eventId: event.id }, new Date().toISOString()), 1)
  await rx.waitFor((d) => d.length === 1)
  t.equal(rx.deliveries[0]?.id, event.id, 'the same webhook-id as the failed attempts')
  t.same(new Set(rx.attempts.map((a) => a.id)), new Set([event.id]))
})

t.test('rotate-secret: during the grace period both secrets sign; after it, only the new one', async (t) => {
  const { app } = await testApp(t, ALLOW)
  const rx = await receiver(t)
  const { id, secret: first } = await endpointAt(app, rx)
  const admin = adminOf(app)
  const { submit } = await submitter(app)

  const rotated = await rotateSecret(admin, id, 60 * 60 * 1000)
  if (!rotated) throw new Error('not rotated')
  t.match(rotated.secret, /^whsec_/)
  t.not(rotated.secret, first)
  rx.secrets.set('/hook', [first, rotated.secret])
  await submit(leadOf(1))
  await rx.waitFor((d) => d.length === 1)
  t.same(rx.deliveries[0]?.verifiedBy, [0, 1], 'a receiver still on the old secret verifies, and one on the new secret too')
  t.equal(rx.deliveries[0]?.signature.split(' ').length, 2, 'two v1 signatures in the header')

  // A rotation with no grace period: the previous secret stops signing at once.
  const again = await rotateSecret(admin, id, 0)
  if (!again) throw new Error('not rotated')
  rx.secrets.set('/hook', [rotated.secret, again.secret])
  await submit(leadOf(2))
  await rx.waitFor((d) => d.length === 2)
  t.same(rx.deliveries[1]?.verifiedBy, [1], 'only the newest secret verifies once the grace period is over')

  const now = new Date('2026-11-22T10:00:00.000Z')
  const endpoint = { secret: 'whsec_new', previous_secret: 'whsec_old', previous_secret_until: '2026-11-22T11:00:00.000Z' }
  t.same(signingSecrets(endpoint, now), ['whsec_new', 'whsec_old'], 'within the grace period')
  t.same(signingSecrets(endpoint, new Date('2026-11-22T11:00:00.000Z')), ['whsec_new'], 'from its end')
  t.same(signingSecrets({ ...endpoint, previous_secret: null, previous_secret_until: null }, now), ['whsec_new'])
})

t.test('safety: https to public addresses only, checked when added and at every delivery', async (t) => {
  const { app } = await testApp(t) // WEBHOOKS_ALLOW_PRIVATE off, as in production
  const strict = adminOf(app, false)
  const refused: [string, RegExp][] = [
    ['http://203.0.113.10/hook', /must be https.*WEBHOOKS_ALLOW_PRIVATE=true/],
    ['https://127.0.0.1/hook', /127\.0\.0\.1.*not a public address.*WEBHOOKS_ALLOW_PRIVATE=true/],
    ['https://localhost/hook', /not a public address/],
    ['https://10.1.2.3/hook', /not a public address/],
    ['https://192.168.1.20/hook', /not a public address/],
    ['https://169.254.169.254/latest/meta-data', /not a public address/],
    ['https://[::1]/hook', /not a public address/],
    ['https://[::ffff:10.0.0.1]/hook', /not a public address/],
    ['https://user:pass@198.51.100.7/hook', /credentials/],
    ['ftp://198.51.100.7/hook', /must be https/],
    ['not a url', /not an absolute URL/],
  ]
  for (const [url, why] of refused) await t.rejects(addEndpoint(strict, { url }), why, `${url} refused`)
  await t.rejects(addEndpoint(strict, { url: 'https://93.184.216.34/hook', events: ['lead.created'] }), /unknown event type lead\.created/)
  const ok = await addEndpoint(strict, { url: 'https://93.184.216.34/hook' })
  t.same(
    ok.events,
    ['lead.received', 'lead.erased'],
    'a public https URL is accepted (nothing is sent on adding); lead.received brings lead.erased',
  )
  await strict.repo.removeEndpoint(ok.endpoint_id)

  for (const [address, pub] of [
    ['8.8.8.8', true],
    ['2606:4700:4700::1111', true],
    ['127.0.0.1', false],
    ['100.64.0.1', false],
    ['172.16.5.4', false],
    ['0.0.0.0', false],
    ['fe80::1', false],
    ['fd00::1', false],
    ['::ffff:127.0.0.1', false],
    ['224.0.0.1', false],
  ] as const) {
    t.equal(isPublicAddress(address), pub, `${address} is ${pub ? '' : 'not '}public`)
  }

  // Endpoints that became unsafe after they were added (a literal address, and a name whose DNS
  // now answers a loopback address): the delivery is refused before any connection is made, and
  // held back (not counted as an attempt), saying which setting would let it through.
  const rx = await receiver(t)
  const lenient = adminOf(app, true)
  const plain = await addEndpoint(lenient, { url: `${rx.url}/plain` })
  const literal = await addEndpoint(lenient, { url: `https://127.0.0.1:${rx.port}/literal` })
  const named = await addEndpoint(lenient, { url: `https://localhost:${rx.port}/named` })
  const { submit } = await submitter(app)
  const event = await eventOf(app, await submit(leadOf(1)))
  const outcome = (e: { endpoint_id: string }) => lenient.repo.delivery(e.endpoint_id, event.id)
  await until('the three outcomes recorded', async () =>
    (await Promise.all([plain, literal, named].map(outcome))).every((d) => d?.last_outcome !== null),
  )
  const held = (why: string) => ({
    status: 'pending',
    attempts: 0,
    last_outcome: `held: ${why} on this server (WEBHOOKS_ALLOW_PRIVATE=true allows it)`,
  })
  t.match(await outcome(plain), held('http is not allowed'), 'an http:// URL')
  t.match(await outcome(literal), held('not a public address'), 'an address in the URL')
  t.match(await outcome(named), held('not a public address'), 'a name resolved at connection time')
  t.equal(rx.started, 0, 'no request reached the private address')
  // The endpoint's health is recorded as its turn ends, a moment after the delivery's outcome.
  await until('the status says why', async () => (await lenient.repo.status()).filter((e) => e.last_failure).length === 3)
  const status = await lenient.repo.status()
  for (const e of [plain, literal, named]) {
    t.match(
      status.find((s) => s.id === e.endpoint_id),
      { pending: 1, failing_since: String, last_failure: /^held: .*WEBHOOKS_ALLOW_PRIVATE=true allows it/, next_attempt_at: String },
      'status says why, and when it is looked at again',
    )
  }
})

t.test('safety: every IPv6 form of an IPv4 address is judged by that address or refused, at adding and at connecting', async (t) => {
  const { app } = await testApp(t) // WEBHOOKS_ALLOW_PRIVATE off, as in production
  const strict = adminOf(app, false)
  const refused = [
    '::127.0.0.1', // IPv4-compatible (::/96, deprecated): the URL parser writes it ::7f00:1
    '::a9fe:a9fe', // the same, 169.254.169.254 (cloud metadata)
    '::8.8.8.8', // IPv4-compatible is refused whatever it carries
    '::ffff:169.254.169.254', // IPv4-mapped, judged by its IPv4
    '::ffff:0:127.0.0.1', // SIIT (::ffff:0:0:0/96)
    '64:ff9b::127.0.0.1', // NAT64's well-known prefix, judged by its IPv4
    '64:ff9b::a9fe:a9fe',
    '64:ff9b:1::808:808', // local-use NAT64 (64:ff9b:1::/48)
    '2002:7f00:1::1', // 6to4 (2002::/16)
    '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo (2001::/32)
    'fec0::1', // site-local (deprecated)
    '100::1', // discard-only
    '2001:db8::1', // documentation
    '1::1', // not global unicast (outside 2000::/3)
    '4000::1',
  ]
  for (const address of refused) {
    t.notOk(isPublicAddress(address), `${address} is not public`)
    await t.rejects(
      addEndpoint(strict, { url: `https://[${address}]/hook` }),
      /not a public address.*WEBHOOKS_ALLOW_PRIVATE=true/,
      `https://[${address}]/hook refused when added`,
    )
  }
  for (const address of ['::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2606:4700:4700::1111', '2a00:1450:4007:80e::200e']) {
    t.ok(isPublicAddress(address), `${address} is public`)
  }

  // At connection time: the guarded lookup (what every delivery's socket resolves through) refuses
  // what the resolver answers, and an address in the URL is refused before connecting.
  for (const address of ['::127.0.0.1', '::a9fe:a9fe', '64:ff9b::7f00:1', 'fec0::1']) {
    const err = await new Promise<Error | null>((resolve) => guardedLookup(false)(address, {}, (e) => resolve(e)))
    t.type(err, UnsafeTarget, `a name resolving to ${address} is refused at connection time`)
  }
  for (const address of ['::127.0.0.1', '::a9fe:a9fe', '::ffff:0:a9fe:a9fe']) {
    t.same(
      await send(`https://[${address}]:443/hook`, {}, '{}', { allowPrivate: false, timeoutMs: 2000 }),
      { error: 'refused: not a public address', allowedByPrivate: true },
      `a delivery to [${address}] is refused before connecting`,
    )
  }
  // And through the worker: endpoints added where private addresses were allowed, delivered by a
  // server where they are not, are held back, nothing sent.
  const lenient = adminOf(app, true)
  const added = await Promise.all(['::127.0.0.1', '::ffff:0:127.0.0.1'].map((a) => addEndpoint(lenient, { url: `https://[${a}]:9/hook` })))
  const { submit } = await submitter(app)
  const event = await eventOf(app, await submit(leadOf(1)))
  for (const e of added) {
    await until('held', async () => (await lenient.repo.delivery(e.endpoint_id, event.id))?.last_outcome != null)
    t.match(await lenient.repo.delivery(e.endpoint_id, event.id), {
      status: 'pending',
      attempts: 0,
      last_outcome: 'held: not a public address on this server (WEBHOOKS_ALLOW_PRIVATE=true allows it)',
    })
  }
})

t.test('a commit wakes the worker when it made deliveries, and only then', async (t) => {
  const { app } = await testApp(t, ALLOW)
  const rx = await receiver(t)
  const { submit } = await submitter(app)
  // Lease queries made from a commit (the worker's poll makes others, on its own timer).
  const repo = app.deliveries.repo
  const lease = repo.leaseEndpoints.bind(repo)
  let fromCommits = 0
  repo.leaseEndpoints = (...args: Parameters<typeof lease>) => {
    if (new Error().stack?.includes('afterCommit')) fromCommits++
    return lease(...args)
  }
  for (let i = 0; i < 3; i++) await submit(leadOf(i))
  t.equal(fromCommits, 0, 'no endpoint, no delivery: the commits leave the worker alone')
  await endpointAt(app, rx, '/hook')
  const id = await submit(leadOf(3))
  t.ok(fromCommits > 0, 'a commit that made a delivery wakes the worker')
  await rx.waitFor((d) => d.length === 1)
  t.same(leadIds(rx.deliveries), [id], 'and the lead is delivered')
})

t.test('fair between endpoints: receivers that never answer do not hold up a healthy one', async (t) => {
  // Two endpoints served at once, and a generous attempt timeout: every lead must reach the
  // healthy endpoint while all six attempts to the hanging ones are still waiting for an answer.
  const { app } = await testApp(t, { ...ALLOW, webhooksConcurrency: 2, webhooksTimeoutSeconds: 120 })
  const rx = await receiver(t)
  const hanging = ['/hang1', '/hang2', '/hang3', '/hang4', '/hang5', '/hang6']
  // Added first: the hanging endpoints are the oldest (and would be served first by age).
  for (const path of hanging) await endpointAt(app, rx, path)
  const { id: healthy } = await endpointAt(app, rx, '/ok')
  rx.answer = (path) => (path === '/ok' ? 200 : new Promise<number>(() => {}))
  const { submit } = await submitter(app)
  const ids: string[] = []
  // One at a time: each lead its own commit, each wakes the worker.
  for (let i = 0; i < 20; i++) ids.push(await submit(leadOf(i)))
  await rx.waitFor((d) => d.filter((x) => x.path === '/ok').length === 20, 90_000)
  await until('an attempt under way to every hanging endpoint', async () => hanging.every((p) => rx.requests.includes(p)), 90_000)

  t.same(leadIds(rx.deliveries.filter((d) => d.path === '/ok')), ids, 'the healthy endpoint got every lead, in order')
  const ended = await app.store.db
    .selectFrom('webhook_deliveries')
    .select(['endpoint_id', 'last_outcome'])
    .where('attempts', '>', 0)
    .execute()
  t.same(
    ended.filter((d) => d.endpoint_id !== healthy),
    [],
    'meanwhile no attempt to a hanging endpoint has ended (none timed out): they never held the healthy one up',
  )
  t.equal(rx.attempts.filter((a) => a.path !== '/ok').length, 0, 'the hanging receivers answered nothing')
  t.same(
    hanging.map((p) => rx.requests.filter((r) => r === p).length),
    [1, 1, 1, 1, 1, 1],
    'one attempt at a time to each hanging endpoint',
  )
})

t.test('an attempt: at most the timeout, an answer read only up to a few KiB', async (t) => {
  const server = createServer((req, res) => {
    if (req.url === '/silent') return // never answers
    res.writeHead(200, { 'content-type': 'text/plain' })
    const chunk = Buffer.alloc(64 * 1024, 'x')
    // An endless answer: written until the client hangs up.
    const more = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', more)
    }
    more()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const options = { allowPrivate: true, timeoutMs: 300 }
  t.same(await send(`${base}/silent`, {}, '{}', options), { error: 'timeout' }, 'no answer within the timeout')
  t.same(await send(`${base}/endless`, {}, '{}', options), { status: 200 }, 'an endless answer: its status, the body cut short')
  t.equal(DELIVERY_TIMEOUT_MS, 10_000, 'the timeout deliveries use')
  t.ok(MAX_RESPONSE_BYTES <= 16 * 1024, 'a small read limit')
})

t.test('redirects are not followed', async (t) => {
  const { app } = await testApp(t, ALLOW)
  const rx = await receiver(t)
  const { id } = await endpointAt(app, rx)
  const admin = adminOf(app)
  rx.answer = () => 302
  const { submit } = await submitter(app)
  const event = await eventOf(app, await submit(leadOf(1)))
  await until('the attempt is recorded', async () => (await admin.repo.delivery(id, event.id))?.attempts === 1)
  t.match(await admin.repo.delivery(id, event.id), { status: 'pending', last_outcome: '302' }, 'a redirect is a failed attempt')
  t.same(
    rx.attempts.map((a) => a.path),
    ['/hook'],
    'the Location was never requested',
  )
})

t.test('operations: metrics, /readyz unaffected by a failing receiver, no lead field or secret in the log', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString())
      done()
    },
  })
  const config = createConfig({ dataDir: testdir(t, {}), ...ALLOW, webhooksFirstRetryMs: 20, ...(await storageConfig(t)) })
  const app = await buildApp(config, { logger: { level: 'debug', stream } })
  let closed = false
  t.teardown(async () => {
    if (!closed) await app.close()
  })
  await app.ready()
  const rx = await receiver(t)
  const added = await addEndpoint(adminOf(app), { url: `${rx.url}/hook?token=receiver-side-token-1234` })
  rx.secrets.set('/hook', [added.secret])
  const failures = new Set<string>()
  rx.answer = (_path, d) => {
    if (failures.has(d.id)) return 200
    failures.add(d.id)
    return 503
  }
  const leads = [
    { name: 'Zephyrine Quillfeather', email: 'zephyrine.quillfeather@example.org', phone: '+41 44 555 01 23' },
    { name: 'Bartholomew Oyelaran-Sturt', email: 'b.oyelaran.sturt@example.net', phone: '(0)20 7946 8871' },
    { name: 'Ingrid Vasquez-Holmgren', email: 'ingrid+architecture@example.com', phone: '555.867.5309' },
  ]
  const { submit } = await submitter(app)
  for (const lead of leads) await submit(lead)
  const ready = await app.inject({ url: '/readyz' })
  t.equal(ready.statusCode, 200, '/readyz is about this instance, not about receivers')
  await rx.waitFor((d) => d.length === 3)
  await until('pending drained', async () => (await adminOf(app).repo.pendingCount()) === 0)

  const metrics = await metricsWith(app, /outcome="delivered"\} 3/)
  const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1])
  t.equal(value('studio_webhook_deliveries_total{outcome="retry"}'), 3, 'each lead failed once')
  t.equal(value('studio_webhook_deliveries_total{outcome="delivered"}'), 3)
  t.equal(value('studio_webhook_pending'), 0, 'nothing pending')
  t.equal(value('studio_webhook_delivery_lag_seconds_count'), 3, 'a lag observed per delivery')
  t.ok(value('studio_webhook_delivery_lag_seconds_sum') > 0)

  await app.close()
  closed = true
  const log = lines.join('')
  t.match(
    log,
    /"level":30,[^\n]*"endpoint":"we_[0-9a-f]+","channel":"webhook","event":"msg_[0-9a-f]+","attempt":1,"reason":"503","next_attempt_at":"[^"]+","msg":"delivery failed; retrying later"/,
    'each failed attempt logged at info: endpoint, channel, event, attempt, reason, next attempt',
  )
  const secrets = [added.secret, added.secret.slice(6), 'receiver-side-token-1234', rx.url]
  for (const needle of [...leads.flatMap((l) => [l.name, l.email, l.phone]), ...secrets]) {
    t.notOk(log.includes(needle), `the log never holds ${needle.slice(0, 12)}…`)
  }
})

t.test('graceful shutdown: an attempt in flight finishes, or is cut short and stays pending; never lost', async (t) => {
  const { app, config } = await testApp(t, ALLOW)
  const rx = await receiver(t)
  const { id } = await endpointAt(app, rx)
  const { submit } = await submitter(app)

  // In flight when close starts, answered within the grace: recorded as delivered.
  let release: (status: number) => void = () => {}
  rx.answer = () => new Promise<number>((resolve) => (release = resolve))
  const quick = await eventOf(app, await submit(leadOf(1)))
  await until('the request is in flight', async () => rx.started === 1)
  const closing = app.close()
  setTimeout(() => release(200), 200)
  await closing
  t.equal(rx.deliveries.length, 1)

  // An answer that does not come within the grace: cut short, not counted, still pending.
  const second = await buildApp(config)
  t.teardown(() => second.close())
  await second.ready()
  rx.answer = () => new Promise<number>(() => {})
  const slow = await eventOf(second, await (await submitter(second)).submit(leadOf(2)))
  await until('the request is in flight', async () => rx.started === 2)
  await second.close()

  // The next instance: its storage says what happened, then its worker delivers what waits.
  const third = await buildApp(config)
  t.teardown(() => third.close())
  const repo = adminOf(third).repo
  t.match(await repo.delivery(id, quick.id), { status: 'delivered' }, 'the attempt in flight at the first close finished and was recorded')
  t.match(await repo.delivery(id, slow.id), { status: 'pending', attempts: 0 }, 'the one cut short is pending, the attempt not counted')
  t.equal((await repo.findEndpoint(id))?.lease_owner, null, 'the lease was released for the next instance')
  rx.answer = () => 200
  await third.ready()
  await rx.waitFor((d) => d.some((x) => x.id === slow.id))
  t.equal(rx.deliveries.filter((x) => x.id === slow.id).length, 1, 'delivered by the next instance')
})

t.test('the retry schedule: exponential, ±20 % jitter, about a day over the default 10 attempts', async (t) => {
  const { webhooksFirstRetryMs: firstRetryMs, webhooksMaxAttempts: maxAttempts } = createConfig()
  const policy = { firstRetryMs, maxAttempts }
  const nominal = Array.from({ length: maxAttempts }, (_, i) => retryDelay(policy, i + 1, () => 0.5))
  t.same(
    nominal,
    [10_000, 30_000, 90_000, 270_000, 810_000, 2_430_000, 7_290_000, 21_870_000, 65_610_000, undefined],
    '10 s, 30 s, 1.5 min, 4.5 min, 13.5 min, 40.5 min, ~2 h, ~6 h, ~18 h, then dead',
  )
  const total = nominal.reduce<number>((sum, d) => sum + (d ?? 0), 0) / 3_600_000
  t.ok(total > 20 && total < 30, `the last attempt ${total.toFixed(1)} h after the first: about a day`)
  t.equal(
    retryDelay(policy, 1, () => 0),
    8_000,
    'jitter: at least 80 %',
  )
  t.equal(
    retryDelay(policy, 1, () => 0.999_999),
    12_000,
    'jitter: at most 120 %',
  )
  t.equal(
    retryDelay({ firstRetryMs: 20, maxAttempts: 3 }, 2, () => 0.5),
    60,
    'the same function with a test policy',
  )
  t.equal(retryDelay({ firstRetryMs: 20, maxAttempts: 3 }, 3), undefined)
})

t.test('the served /openapi.json describes the events, so receivers generate types from it', async (t) => {
  const { app } = await testApp(t)
  const doc = (await app.inject({ url: '/openapi.json' })).json()
  t.same(Object.keys(doc.webhooks), ['lead.received', 'lead.erased', 'webhook.test'])
  t.same(doc.webhooks['lead.received'].post.requestBody.content['application/json'].schema, {
    $ref: '#/components/schemas/LeadReceivedEvent',
  })
  t.ok(doc.components.schemas.LeadReceivedEvent, 'with the event schema it refers to')
  const built = JSON.parse(leadReceived({ id: 'l1', fields: leadOf(1), received_at: '2026-11-22T10:00:00.000Z', client_id: null }).payload)
  t.same(built, {
    type: 'lead.received',
    timestamp: '2026-11-22T10:00:00.000Z',
    data: { id: 'l1', ...leadOf(1), received_at: '2026-11-22T10:00:00.000Z', client_id: null },
  })
})
