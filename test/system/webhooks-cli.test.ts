// The webhooks CLI (scripts/webhooks.ts) as a child process, on the storage of an app that runs
// at the same time and delivers what the CLI queues to a real receiver.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { leadOf, testApp, tokenFor } from '../helpers/app.js'
import { field, type Run, run } from '../helpers/cli.js'
import { receiver } from '../helpers/receiver.js'
import { adminOf, until } from '../helpers/webhooks.js'

const ALLOW = { WEBHOOKS_ALLOW_PRIVATE: 'true' }

async function submit(app: FastifyInstance, token: string, n: number): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/scripts/enquiry_backend.php',
    headers: { authorization: `Bearer ${token}` },
    payload: leadOf(n),
  })
  if (res.statusCode !== 200) throw new Error(`submit: ${res.statusCode}`)
  return res.json().id as string
}

t.test('webhooks: add, list, test, status, dead letter, replay, rotate-secret, enable, remove while the app runs', async (t) => {
  const { app, config } = await testApp(t, { webhooksAllowPrivate: true, webhooksFirstRetryMs: 20, webhooksMaxAttempts: 2 })
  const rx = await receiver(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const webhooks = (...args: string[]) => run('webhooks', args, config, ALLOW)

  // add: the id and the secret, once.
  const added = await webhooks('add', '--url', `${rx.url}/hook`, '--events', 'lead.received')
  t.equal(added.code, 0, added.stderr)
  const id = field(added.stdout, 'endpoint_id')
  const secret = field(added.stdout, 'secret')
  t.match(id, /^we_[0-9a-f]{16}$/)
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'a Standard Webhooks secret of 32 random bytes')
  t.match(added.stdout, /^events: lead\.received lead\.erased$/m, 'an endpoint that gets leads hears of their erasure')
  rx.secrets.set('/hook', [secret])

  const list = await webhooks('list')
  t.equal(list.code, 0, list.stderr)
  t.match(list.stdout, new RegExp(`^${id}\\tactive\\tlead\\.received lead\\.erased\\t${rx.url}/hook\\t`, 'm'))
  t.notOk(list.stdout.includes(secret.slice(6)), 'list never shows a secret')

  // test: a webhook.test event, delivered by the running app; the CLI waits for the outcome.
  const tested = await webhooks('test', id)
  t.equal(tested.code, 0, tested.stdout + tested.stderr)
  t.match(tested.stdout, /^queued webhook\.test msg_[0-9a-f]{32} for we_/m)
  t.match(tested.stdout, /^delivered \(200\)$/m)
  t.match(rx.deliveries, [{ event: { type: 'webhook.test', data: { endpoint_id: id } }, verifiedBy: [0], valid: true }])

  // A lead that fails twice becomes a dead letter; status shows it.
  rx.answer = () => 500
  const leadId = await submit(app, token, 1)
  const repo = adminOf(app).repo
  await until(
    'a dead letter',
    async () => (await repo.deadLetters(1)).length === 1 && (await repo.findEndpoint(id))?.last_failure === '500',
  )
  let status = await webhooks('status')
  t.equal(status.code, 0, status.stderr)
  t.match(status.stdout, /^endpoint\tchannel\tstate\tpending\tdelivered\tdead\toldest pending\tnext attempt\tlast failure\turl$/m)
  t.match(
    status.stdout,
    new RegExp(`^${id}\\twebhook\\tfailing for \\d+s\\t0\\t1\\t1\\t-\\t-\\t500 \\(\\d+s ago\\)\\t${rx.url}/hook$`, 'm'),
    'failing; pending 0, delivered 1 (the test), dead 1; nothing due; the last failure and when',
  )
  const deadLine = status.stdout.split('\n').find((l) => l.startsWith('msg_'))
  t.match(
    deadLine,
    new RegExp(`^msg_[0-9a-f]{32}\\t${id}\\tlead\\.received\\t${leadId}\\t2 attempts\\t500\\t`),
    'the dead letter, its lead, its attempts and last outcome',
  )
  const eventId = deadLine?.split('\t')[0] as string
  t.equal(rx.attempts.filter((a) => a.id === eventId).length, 2, 'attempted WEBHOOKS_MAX_ATTEMPTS times')

  // replay: the dead letter again, with its webhook-id; the receiver now accepts it.
  rx.answer = () => 200
  const replayed = await webhooks('replay', eventId)
  t.equal(replayed.code, 0, replayed.stderr)
  t.match(replayed.stdout, /^queued 1 deliveries/m)
  await rx.waitFor((d) => d.some((x) => x.id === eventId))
  t.equal(rx.deliveries.find((x) => x.id === eventId)?.event.data.id, leadId, 'the lead, under its first webhook-id')
  const since = await webhooks('replay', '--since', '2000-01-01T00:00:00Z', '--endpoint', id)
  t.match(since.stdout, /^queued 1 deliveries/m, '--since: every lead event not pending (test events are not replayed)')
  await rx.waitFor((d) => d.filter((x) => x.id === eventId).length === 2)
  // replay given a lead id: that lead's event, under its webhook-id.
  await until('recorded', async () => (await repo.delivery(id, eventId))?.status === 'delivered')
  const byLead = await webhooks('replay', leadId)
  t.equal(byLead.code, 0, byLead.stderr)
  t.match(byLead.stdout, /^queued 1 deliveries/m, 'a lead id finds its event')
  await rx.waitFor((d) => d.filter((x) => x.id === eventId).length === 3)

  // rotate-secret: the new secret is printed once; both sign during the grace period.
  const rotated = await webhooks('rotate-secret', id, '--grace', '1h')
  t.equal(rotated.code, 0, rotated.stderr)
  const newSecret = field(rotated.stdout, 'secret')
  t.not(newSecret, secret)
  t.match(rotated.stdout, /The previous secret also signs until \d{4}-\d\d-\d\dT/)
  rx.secrets.set('/hook', [secret, newSecret])
  const second = await submit(app, token, 2)
  await rx.waitFor((d) => d.some((x) => x.event.data.id === second))
  t.same(rx.deliveries.find((x) => x.event.data.id === second)?.verifiedBy, [0, 1], 'old and new secret both verify')

  // 410 disables; status says so; enable resumes the waiting delivery.
  rx.answer = () => 410
  const third = await submit(app, token, 3)
  await until('disabled', async () => (await repo.findEndpoint(id))?.disabled_at !== null)
  status = await webhooks('status')
  t.match(
    status.stdout,
    new RegExp(`^${id}\\twebhook\\tdisabled \\(answered 410 Gone\\)\\t1\\t\\d+\\t0\\t\\d+s\\t- \\(disabled\\)\\t410 `, 'm'),
    'disabled, one delivery waiting',
  )
  const refused = await webhooks('test', id)
  t.equal(refused.code, 1, 'a test to a disabled endpoint is refused')
  t.match(refused.stderr, new RegExp(`endpoint ${id} is disabled \\(answered 410 Gone\\): enable it first`))
  rx.answer = () => 200
  const enabled = await webhooks('enable', id)
  t.equal(enabled.code, 0, enabled.stderr)
  await rx.waitFor((d) => d.some((x) => x.event.data.id === third))

  // remove: gone from the list; removing again fails, naming it.
  const removed = await webhooks('remove', id)
  t.equal(removed.code, 0, removed.stderr)
  t.match((await webhooks('list')).stdout, /^no endpoints$/m)
  const again = await webhooks('remove', id)
  t.equal(again.code, 1)
  t.match(again.stderr, new RegExp(`no endpoint ${id}`))
})

t.test('webhooks: bad command lines and unsafe URLs are refused, naming the problem', async (t) => {
  const { config } = await testApp(t)
  const cases: [string, string[], Record<string, string>, number, RegExp][] = [
    ['no command', [], {}, 64, /Usage: studio webhooks \[options\] \[command\][\s\S]*Commands:/],
    ['unknown command', ['frobnicate'], {}, 64, /unknown command 'frobnicate'/],
    ['add without --url', ['add'], {}, 64, /add needs --url/],
    [
      'an http URL',
      ['add', '--url', 'http://203.0.113.9/hook'],
      {},
      1,
      /must be https \(got http\): set WEBHOOKS_ALLOW_PRIVATE=true .*and for the server alike/,
    ],
    ['a private address', ['add', '--url', 'https://10.0.0.7/hook'], {}, 1, /10\.0\.0\.7.*not a public address.*WEBHOOKS_ALLOW_PRIVATE/],
    [
      'an unknown event type',
      ['add', '--url', 'http://127.0.0.1:9/hook', '--events', 'lead.deleted'],
      ALLOW,
      1,
      /unknown event type lead\.deleted; event types are lead\.received/,
    ],
    ['replay with nothing', ['replay'], {}, 64, /give an event id \(msg_…\), a lead id, --since TIME or --dead/],
    ['replay with both', ['replay', 'msg_x', '--since', '2026-01-01T00:00:00Z'], {}, 64, /one of them/],
    ['replay of an unknown event', ['replay', 'msg_missing'], {}, 1, /no event msg_missing: give an event's webhook-id \(msg_…/],
    ['replay of an unknown lead', ['replay', '01939f2e-0000-7000-8000-00000000000f'], {}, 1, /or the id of a stored lead/],
    ['replay --since garbage', ['replay', '--since', 'yesterday-ish'], {}, 64, /--since "yesterday-ish" is not an RFC 3339 time/],
    ['rotate-secret with a bad grace', ['rotate-secret', 'we_x', '--grace', 'a while'], {}, 64, /cannot read --grace/],
    ['rotate-secret of an unknown endpoint', ['rotate-secret', 'we_missing'], {}, 1, /no endpoint we_missing/],
    ['test without an id', ['test'], {}, 64, /missing required argument 'endpoint_id'/],
    ['a misspelt option', ['add', '--ur', 'https://example.com/hook'], {}, 64, /unknown option '--ur'\n\(Did you mean --url\?\)/],
    ['test of an unknown endpoint', ['test', 'we_missing'], {}, 1, /no endpoint we_missing/],
  ]
  const results = await Promise.all(cases.map(([, args, env]) => run('webhooks', args, config, env)))
  for (const [i, [name, , , code, why]] of cases.entries()) {
    const res = results[i] as Run
    t.equal(res.code, code, `${name}: exit ${code}`)
    t.match(res.stderr, why, `${name}: says what is wrong`)
    if (code === 64 && name !== 'no command') t.match(res.stderr, /--help for usage/, `${name}: says where the usage is`)
    t.notMatch(res.stdout, /secret:/, `${name}: nothing created`)
  }
  const help = await run('webhooks', ['--help'], config)
  t.equal(help.code, 0)
  t.match(help.stdout, /rotate-secret \[options\] <endpoint_id>/)
})
