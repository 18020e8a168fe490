// Standard Webhooks signatures, made by the `standardwebhooks` library (never our own HMAC
// format): the endpoint's secret signs `{id}.{timestamp}.{body}`; during a rotation's grace
// period the previous secret signs too, and the header carries both signatures.
import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'

/** A new endpoint secret: 32 random bytes, base64, with the Standard Webhooks `whsec_` prefix. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`

export interface Secrets {
  secret: string
  previous_secret: string | null
  previous_secret_until: string | null
}

/** The secrets that sign at `now`: the current one, and the previous one within its grace period. */
export function signingSecrets(endpoint: Secrets, now: Date): string[] {
  const previousValid =
    endpoint.previous_secret !== null && endpoint.previous_secret_until !== null && endpoint.previous_secret_until > now.toISOString()
  return previousValid ? [endpoint.secret, endpoint.previous_secret as string] : [endpoint.secret]
}

/** The three Standard Webhooks headers of one attempt, signed at `at`. */
export function signedHeaders(secrets: string[], id: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(id, at, body)).join(' '),
  }
}
