// The email channel of the delivery worker (features/webhooks): a delivery to the built-in
// endpoint `email` renders the event's lead as a message and sends it to the endpoint's
// recipients. Without SMTP_URL on this server the deliveries are held back, saying so.
import type { NodemailerError, SendMailOptions } from 'nodemailer'
import { type Attempted, type Channel, held, Interrupted } from '../webhooks/channel.js'
import { LEAD_RECEIVED, type LeadReceivedEvent, TEST_EVENT } from '../webhooks/events.js'
import { type DueDelivery, type Endpoint, recipientsOf } from '../webhooks/repository.js'
import { headerText, type LeadMessage, leadMessage, type MessageStyle, testMessage } from './message.js'
import { failedOutcome, type Mailer, sentOutcome } from './transport.js'

export interface EmailChannelOptions extends MessageStyle {
  /** Undefined when SMTP_URL is not set on this server. */
  mailer: Mailer | undefined
  from: string
}

/** The message a delivery sends, or why it cannot be rendered. */
export function messageOf(delivery: DueDelivery, style: MessageStyle): LeadMessage | undefined {
  if (delivery.event_type === LEAD_RECEIVED) return leadMessage((JSON.parse(delivery.payload) as LeadReceivedEvent).data, style)
  if (delivery.event_type === TEST_EVENT) return testMessage(delivery.event_id, style.publicHost, new Date(delivery.event_created_at))
  return undefined
}

/**
 * What nodemailer is given: the message, from and to, and a header that keeps auto-replies away.
 * The Subject goes as encoded-words written here (headerText), prepared: nodemailer would pass an
 * ASCII subject through as it is, encoded-words a prospect typed included.
 */
export function envelope(message: LeadMessage, from: string, to: string[]): SendMailOptions {
  const { subject, ...rest } = message
  return {
    ...rest,
    from,
    to,
    headers: { 'Auto-Submitted': 'auto-generated', Subject: { prepared: true, foldLines: true, value: headerText(subject) } },
  }
}

export function emailChannel(options: EmailChannelOptions): Channel {
  return {
    async deliver(endpoint: Endpoint, delivery: DueDelivery, signal: AbortSignal): Promise<Attempted> {
      if (!options.mailer) return held('SMTP_URL is not set on this server')
      const message = messageOf(delivery, options)
      if (!message) return { failed: `no email for ${delivery.event_type} events`, permanent: true }
      try {
        const info = await options.mailer.send(envelope(message, options.from, recipientsOf(endpoint.url)), signal)
        return { delivered: sentOutcome(info) }
      } catch (err) {
        if (err instanceof Interrupted) throw err
        return failedOutcome(err as NodemailerError)
      }
    },
    close: async () => options.mailer?.close(),
  }
}
