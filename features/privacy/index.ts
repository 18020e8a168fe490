// Personal data: the retention check (at start and hourly) over what features/privacy/privacy.ts
// does, and `app.privacy` for the rest. Access and erasure requests are operator commands
// (scripts/leads.ts), which run the same code over the same storage. Several instances may check
// at once: each lead's erasure commits once (the others find it gone), see repository.ts.
// Log lines carry counts, never a lead's data.
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { Privacy } from './privacy.js'

declare module 'fastify' {
  interface FastifyInstance {
    privacy: Privacy
  }
}

export const RETENTION_CHECK_MS = 60 * 60 * 1000

export interface PrivacyOptions {
  config: Config
  /** How often retention is checked (default hourly; tests shorten it). */
  everyMs?: number
}

export default fp<PrivacyOptions>(
  async (app, { config, everyMs = RETENTION_CHECK_MS }) => {
    // The pepper auth checked against the database (plugins/auth/secrets.ts databasePepper).
    const privacy = new Privacy(app.store, app.auth.admin.pepper)
    const policy = { leadsDays: config.leadsRetentionDays, payloadDays: config.webhookPayloadRetentionDays }
    let running: Promise<void> | undefined
    let closing = false

    const check = () => {
      if (running || closing) return
      running = privacy
        .applyRetention(policy, { withinMs: 10_000 })
        .then((r) => {
          if (r.erased + r.events + r.scrubbed > 0)
            app.log.info({ erased: r.erased, events_deleted: r.events, erasures_scrubbed: r.scrubbed }, 'retention applied')
        })
        .catch((err: Error) => app.log.warn({ err: { message: err.message } }, 'retention check failed; it runs again within the hour'))
        .finally(() => {
          running = undefined
        })
    }

    const timer = setInterval(check, everyMs)
    timer.unref()
    // At start, once the server is ready, without holding the start-up.
    app.addHook('onReady', async () => check())
    // Runs before the store closes (registered after it).
    app.addHook('onClose', async () => {
      closing = true
      clearInterval(timer)
      await running
    })
    app.decorate('privacy', privacy)
  },
  { name: 'privacy', fastify: '5.x', dependencies: ['store', 'auth', 'leads', 'webhooks'] },
)
