// Manage the endpoints that receive lead.received (and lead.erased) events, in the configured storage; safe while
// the server runs (the running instances deliver what this queues).
//
//   npm run webhooks -- add --url https://crm.example/hooks/studio [--events lead.received]
//   npm run webhooks -- list | status
//   npm run webhooks -- rotate-secret ID [--grace 24h]
//   npm run webhooks -- replay EVENT_ID | LEAD_ID | --since 2026-11-22T00:00:00Z | --dead [--endpoint ID]
//   npm run webhooks -- test ID
//   npm run webhooks -- remove ID | enable ID
import { parseArgs } from 'node:util'
import { parse as parseDuration } from '@lukeed/ms'
import { loadConfig } from '../config.js'
import { addEndpoint, rotateSecret, sendTest, type WebhookAdmin } from '../features/webhooks/admin.js'
import { subscribableTypes } from '../features/webhooks/events.js'
import { WebhooksRepository } from '../features/webhooks/repository.js'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import { commandLine, runCli, UsageError } from './cli.js'
import { NEW_DATABASE_USAGE, openServerStore } from './data.js'
import { printDeadLetters, printStatus, replayFromCommandLine } from './deliveries.js'

const usage = `usage: npm run webhooks -- <command>
  add --url URL [--events a,b]      add an endpoint (default events: lead.received, which brings lead.erased); prints endpoint_id and secret once
  list                              list endpoints (never secrets)
  remove ID                         remove an endpoint and its deliveries
  enable ID                         turn a disabled endpoint (410 Gone) back on; its waiting deliveries resume
  rotate-secret ID [--grace 24h]    a new secret; the old one also signs during the grace period
  status                            per endpoint (the email channel too): state, pending, delivered, dead,
                                    next attempt, last failure; then the dead letters
  replay EVENT_ID                   send an event again (same webhook-id) to every endpoint subscribed to it
  replay LEAD_ID                    the same, for the events of that lead
  replay --since TIME | --dead      every event since TIME (RFC 3339), or every dead letter; add --endpoint ID for one endpoint
  test ID [--wait 15]               send a webhook.test event and wait for its outcome (seconds)
  ${NEW_DATABASE_USAGE}`

function parseOptions(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      events: { type: 'string' },
      grace: { type: 'string', default: '24h' },
      since: { type: 'string' },
      endpoint: { type: 'string' },
      wait: { type: 'string', default: '15' },
      dead: { type: 'boolean' },
      'new-database': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  })
}

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

async function status(repo: WebhooksRepository): Promise<void> {
  const now = new Date()
  printStatus(out, await repo.status(), now)
  printDeadLetters(out, await repo.deadLetters(51), 'npm run webhooks -- replay EVENT_ID | LEAD_ID | --dead')
}

async function waitForTest(repo: WebhooksRepository, id: string, eventId: string, seconds: number): Promise<number> {
  const deadline = Date.now() + seconds * 1000
  for (;;) {
    const d = await repo.delivery(id, eventId)
    if (d?.status === 'delivered') {
      out(`delivered (${d.last_outcome})`)
      return 0
    }
    if (Date.now() > deadline || d?.status === 'dead') {
      const last = d?.last_outcome ? `last attempt: ${d.last_outcome}` : 'no attempt yet: is the server running?'
      out(`not delivered within ${seconds} s (${last}); it stays queued and is retried`)
      return 1
    }
    await new Promise((r) => setTimeout(r, 200))
  }
}

async function run(command: string, id: string | undefined, values: ReturnType<typeof parseOptions>['values'], admin: WebhookAdmin) {
  const { repo } = admin
  const need = (what: string) => {
    if (!id) throw new UsageError(`${command} needs ${what}`)
    return id
  }
  switch (command) {
    case 'add': {
      if (!values.url) throw new UsageError('add needs --url')
      const events = (values.events ?? '').split(/[,\s]+/).filter(Boolean)
      const added = await addEndpoint(admin, { url: values.url, events })
      out(`endpoint_id: ${added.endpoint_id}\nsecret: ${added.secret}\nevents: ${added.events.join(' ')}`)
      out('The secret is shown only now: give it to the receiver, which verifies every delivery with it.')
      return 0
    }
    case 'list': {
      const rows = await repo.listEndpoints()
      for (const r of rows) out([r.id, r.disabled_at ? 'disabled' : 'active', r.events, r.url, r.created_at].join('\t'))
      if (rows.length === 0) out('no endpoints')
      return 0
    }
    case 'remove':
      if (!(await repo.removeEndpoint(need('an endpoint id')))) throw new Error(`no endpoint ${id}`)
      out(`removed ${id}`)
      return 0
    case 'enable':
      if (!(await repo.setDisabled(need('an endpoint id'), null))) throw new Error(`no endpoint ${id}`)
      out(`enabled ${id}; its waiting deliveries resume`)
      return 0
    case 'rotate-secret': {
      const grace = parseDuration(values.grace ?? '')
      if (grace === undefined || !Number.isFinite(grace) || grace < 0)
        throw new UsageError(`cannot read --grace ${values.grace}; write e.g. 24h or 30m`)
      const rotated = await rotateSecret(admin, need('an endpoint id'), grace)
      if (!rotated) throw new Error(`no endpoint ${id}`)
      out(`endpoint_id: ${id}\nsecret: ${rotated.secret}\nThe previous secret also signs until ${rotated.previous_until}.`)
      return 0
    }
    case 'status':
      await status(repo)
      return 0
    case 'replay': {
      const queued = await replayFromCommandLine(repo, id, values, values.endpoint)
      out(`queued ${queued} deliveries (the same webhook-id as before: receivers de-duplicate)`)
      return 0
    }
    case 'test': {
      const eventId = await sendTest(admin, need('an endpoint id'))
      if (!eventId) throw new Error(`no endpoint ${id}`)
      out(`queued webhook.test ${eventId} for ${id}`)
      return waitForTest(repo, id as string, eventId, Number(values.wait))
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = commandLine(() => parseOptions(argv))
  if (values.help) {
    out(usage)
    return 0
  }
  const [command, id] = positionals
  if (!command) throw new UsageError('no command given')
  const config = loadConfig()
  const store = await openServerStore(config, values['new-database'] === true)
  const admin: WebhookAdmin = {
    repo: new WebhooksRepository(store.db, store.dialect),
    allowPrivate: config.webhooksAllowPrivate,
    eventTypes: subscribableTypes(new Spec(loadSpec())),
  }
  try {
    return await run(command, id, values, admin)
  } finally {
    await store.close()
  }
}

runCli('webhooks', usage, main)
