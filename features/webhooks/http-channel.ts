// The webhook channel: a delivery is a POST of the event, signed with the endpoint's secret(s)
// (Standard Webhooks), to its URL, through the safety rules (sender.ts). 2xx is delivered, 410
// disables the endpoint, anything else is retried; a URL this server's settings refuse (an
// http:// URL or a private address without WEBHOOKS_ALLOW_PRIVATE) is held back, saying so.
import { type Attempted, type Channel, held } from './channel.js'
import { send } from './sender.js'
import { signedHeaders, signingSecrets } from './signing.js'

export function webhookChannel(options: { allowPrivate: boolean; timeoutMs: number }): Channel {
  return {
    async deliver(endpoint, delivery, signal): Promise<Attempted> {
      const at = new Date()
      const headers = signedHeaders(signingSecrets(endpoint, at), delivery.event_id, at, delivery.payload)
      const result = await send(endpoint.url, headers, delivery.payload, { ...options, signal })
      if ('error' in result) {
        return result.allowedByPrivate
          ? held(`${result.error.replace(/^refused: /, '')} on this server (WEBHOOKS_ALLOW_PRIVATE=true allows it)`)
          : { failed: result.error }
      }
      if (result.status >= 200 && result.status < 300) return { delivered: String(result.status) }
      if (result.status === 410) return { gone: '410' }
      return { failed: String(result.status) }
    },
  }
}
