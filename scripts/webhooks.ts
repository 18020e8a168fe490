// `studio webhooks`: the endpoints that receive lead.received (and lead.erased) events, in the
// configured storage; safe while the server runs (the running instances deliver what this queues).
//
//   npx studio webhooks add --url https://crm.example/hooks/studio [--events lead.received]
//   npx studio webhooks list | status
//   npx studio webhooks rotate-secret ID [--grace 24h]
//   npx studio webhooks replay EVENT_ID | LEAD_ID | --since 2026-11-22T00:00:00Z | --dead [--endpoint ID]
//   npx studio webhooks test ID
//   npx studio webhooks remove ID | enable ID
import { parse as parseDuration } from '@lukeed/ms'
import type { Command } from 'commander'
import { loadConfig } from '../config.js'
import { addEndpoint, rotateSecret, sendTest, type WebhookAdmin } from '../features/webhooks/admin.js'
import { subscribableTypes } from '../features/webhooks/events.js'
import { DeliveryInstances } from '../features/webhooks/instances.js'
import { WebhooksRepository } from '../features/webhooks/repository.js'
import { parseTarget, resolveTarget, UnsafeTarget } from '../features/webhooks/safety.js'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import type { Store } from '../plugins/store/open.js'
import { act, command, need, newDatabaseOption, subcommand, UsageError } from './cli.js'
import { openServerStore } from './data.js'
import { printDeadLetters, printStatus, replayFromCommandLine } from './deliveries.js'

const out = (text: string): void => {
  process.stdout.write(`${text}\n`)
}

async function status(repo: WebhooksRepository): Promise<void> {
  const now = new Date()
  printStatus(out, await repo.status(), now)
  printDeadLetters(out, await repo.deadLetters(51), 'studio webhooks replay EVENT_ID | LEAD_ID | --dead')
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

/** Whether only WEBHOOKS_ALLOW_PRIVATE lets deliveries go to this URL (http://, a private address). */
async function needsAllowPrivate(url: string): Promise<boolean> {
  try {
    await resolveTarget(parseTarget(url, false), false)
    return false
  } catch (err) {
    return err instanceof UnsafeTarget && err.allowedByPrivate
  }
}

/**
 * Says at once when the servers delivering from this storage would hold the new endpoint back
 * (they run without WEBHOOKS_ALLOW_PRIVATE), rather than a test delivery saying so later.
 */
async function warnIfHeld(url: string, instances: DeliveryInstances): Promise<void> {
  if (!(await needsAllowPrivate(url))) return
  const running = await instances.running()
  const holding = running.filter((i) => !i.allowPrivate)
  if (holding.length > 0) {
    process.stderr.write(
      `warning: ${holding.length} of the ${running.length} server(s) delivering from this storage run without WEBHOOKS_ALLOW_PRIVATE=true ` +
        `(${holding.map((i) => i.id).join(', ')}): they hold this endpoint's deliveries back until restarted with it\n`,
    )
  } else if (running.length === 0) {
    process.stderr.write(
      'note: no server delivers from this storage now: start it with WEBHOOKS_ALLOW_PRIVATE=true, or it will hold this endpoint back\n',
    )
  }
}

/** The endpoints' storage and what the commands need of the configuration; closed after `fn`. */
async function withAdmin(cmd: Command, fn: (admin: WebhookAdmin, store: Store) => Promise<number>): Promise<number> {
  const config = loadConfig()
  const store = await openServerStore(config, cmd.optsWithGlobals().newDatabase === true)
  try {
    const admin = {
      repo: new WebhooksRepository(store.db, store.dialect),
      allowPrivate: config.webhooksAllowPrivate,
      eventTypes: subscribableTypes(new Spec(loadSpec())),
    }
    return await fn(admin, store)
  } finally {
    await store.close()
  }
}

export function webhooksCommand(): Command {
  const webhooks = command(
    'webhooks',
    'the endpoints that receive lead.received (and lead.erased) events; the running servers deliver what these commands queue',
    'webhook endpoints, deliveries, replays',
  ).addOption(newDatabaseOption())

  subcommand(webhooks, 'add', 'add an endpoint; prints endpoint_id and its secret once')
    .option('--url <url>', 'where to deliver: https://… (http:// and private addresses only with WEBHOOKS_ALLOW_PRIVATE=true)')
    .option('--events <list>', 'event types, comma-separated (default lead.received, which brings lead.erased)')
    .action(
      act(async (opts: { url?: string; events?: string }, cmd: Command) => {
        const url = need(opts.url, '--url', 'add')
        return withAdmin(cmd, async (admin, store) => {
          const events = (opts.events ?? '').split(/[,\s]+/).filter(Boolean)
          const added = await addEndpoint(admin, { url, events })
          out(`endpoint_id: ${added.endpoint_id}\nsecret: ${added.secret}\nevents: ${added.events.join(' ')}`)
          out('The secret is shown only now: give it to the receiver, which verifies every delivery with it.')
          await warnIfHeld(url, new DeliveryInstances(store.db))
          return 0
        })
      }),
    )

  subcommand(webhooks, 'list', 'list endpoints (never secrets)').action(
    act((_opts: object, cmd: Command) =>
      withAdmin(cmd, async ({ repo }) => {
        const rows = await repo.listEndpoints()
        for (const r of rows) out([r.id, r.disabled_at ? 'disabled' : 'active', r.events, r.url, r.created_at].join('\t'))
        if (rows.length === 0) out('no endpoints')
        return 0
      }),
    ),
  )

  subcommand(webhooks, 'remove', 'remove an endpoint and its deliveries')
    .argument('<endpoint_id>')
    .action(
      act((id: string, _opts: object, cmd: Command) =>
        withAdmin(cmd, async ({ repo }) => {
          if (!(await repo.removeEndpoint(id))) throw new Error(`no endpoint ${id}`)
          out(`removed ${id}`)
          return 0
        }),
      ),
    )

  subcommand(webhooks, 'enable', 'turn a disabled endpoint (410 Gone) back on; its waiting deliveries resume')
    .argument('<endpoint_id>')
    .action(
      act((id: string, _opts: object, cmd: Command) =>
        withAdmin(cmd, async ({ repo }) => {
          if (!(await repo.setDisabled(id, null))) throw new Error(`no endpoint ${id}`)
          out(`enabled ${id}; its waiting deliveries resume`)
          return 0
        }),
      ),
    )

  subcommand(webhooks, 'rotate-secret', 'a new secret; the old one also signs during the grace period')
    .argument('<endpoint_id>')
    .option('--grace <duration>', 'how long the old secret still signs (e.g. 24h, 30m)', '24h')
    .action(
      act(async (id: string, opts: { grace: string }, cmd: Command) => {
        const grace = parseDuration(opts.grace)
        if (grace === undefined || !Number.isFinite(grace) || grace < 0)
          throw new UsageError(`cannot read --grace ${opts.grace}; write e.g. 24h or 30m`)
        return withAdmin(cmd, async (admin) => {
          const rotated = await rotateSecret(admin, id, grace)
          if (!rotated) throw new Error(`no endpoint ${id}`)
          out(`endpoint_id: ${id}\nsecret: ${rotated.secret}\nThe previous secret also signs until ${rotated.previous_until}.`)
          return 0
        })
      }),
    )

  subcommand(
    webhooks,
    'status',
    'per endpoint (the email channel too): state, pending, delivered, dead, next attempt, last failure; then the dead letters',
  ).action(
    act((_opts: object, cmd: Command) =>
      withAdmin(cmd, async ({ repo }) => {
        await status(repo)
        return 0
      }),
    ),
  )

  subcommand(webhooks, 'replay', "send events again (same webhook-id): an event (msg_…), a lead's events (its id), --since TIME or --dead")
    .argument('[id]', 'an event id (msg_…) or a lead id')
    .option('--since <time>', 'every event since TIME (RFC 3339)')
    .option('--dead', 'every dead letter')
    .option('--endpoint <endpoint_id>', 'to this endpoint only')
    .action(
      act((id: string | undefined, opts: { since?: string; dead?: boolean; endpoint?: string }, cmd: Command) =>
        withAdmin(cmd, async ({ repo }) => {
          const queued = await replayFromCommandLine(repo, id, opts, opts.endpoint)
          out(`queued ${queued} deliveries (the same webhook-id as before: receivers de-duplicate)`)
          return 0
        }),
      ),
    )

  subcommand(webhooks, 'test', 'send a webhook.test event and wait for its outcome')
    .argument('<endpoint_id>')
    .option('--wait <seconds>', 'how long to wait for the outcome', '15')
    .action(
      act(async (id: string, opts: { wait: string }, cmd: Command) => {
        const wait = Number(opts.wait)
        if (!(wait >= 0 && wait <= 3600)) throw new UsageError(`cannot read --wait ${opts.wait}; write seconds from 0 to 3600`)
        return withAdmin(cmd, async (admin) => {
          const eventId = await sendTest(admin, id)
          if (!eventId) throw new Error(`no endpoint ${id}`)
          out(`queued webhook.test ${eventId} for ${id}`)
          return waitForTest(admin.repo, id, eventId, wait)
        })
      }),
    )
  return webhooks
}
