// Email to the studio: every stored lead is emailed to LEAD_EMAIL_TO through SMTP_URL, as a
// second channel of the same transactional outbox as the webhooks. The server keeps a built-in
// endpoint `email` (kind `email`, its recipients in its URL) subscribed to `lead.received`, so
// each lead's email is a delivery row written in the lead's own transaction and delivered by the
// webhooks plugin's worker: the same retries, dead letters, leases, status and resend.
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { EMAIL_ENDPOINT_ID } from '../webhooks/repository.js'
import { emailChannel } from './channel.js'
import { createMailer, type Mailer } from './transport.js'

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const configured = config.smtpUrl !== undefined && config.leadEmailTo.length > 0
    const mailer: Mailer | undefined = configured
      ? await createMailer({ smtpUrl: config.smtpUrl as string, timeoutMs: config.webhooksTimeoutSeconds * 1000 })
      : undefined
    app.deliveries.addChannel(
      'email',
      emailChannel({
        mailer,
        from: config.leadEmailFrom,
        publicHost: config.publicHost,
        studio: app.playbook.studio.name,
        timeZone: config.studioTimeZone,
      }),
    )

    // Before any lead is taken: from now on each lead's transaction writes its email's delivery.
    if (configured) {
      await app.deliveries.repo.keepEmailEndpoint(config.leadEmailTo, new Date().toISOString())
      return
    }
    const endpoint = await app.deliveries.repo.findEndpoint(EMAIL_ENDPOINT_ID)
    if (endpoint && !endpoint.disabled_at) {
      app.log.warn(
        'lead emails are queued (the endpoint email) but SMTP_URL and LEAD_EMAIL_TO are not set on this server: they wait until they are; `npm run webhooks -- remove email` stops emailing',
      )
    }
  },
  { name: 'email', fastify: '5.x', dependencies: ['webhooks', 'playbook'] },
)
