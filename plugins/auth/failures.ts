// Failed client authentications at the token endpoint, counted in the rate limiter's counters (so
// every instance shares them with Redis). Client ids are not secret, so failures are never
// counted per client id alone (a stranger could then lock the rightful client out from
// anywhere): they are counted per (client id, address) pair, which slows down guessing one
// client's secret, and per address, which bounds guessing across client ids. The rightful
// client, calling from its own address, is never refused for someone else's failures.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { clientAddress } from '../../lib/address.js'
import { AppError } from '../errors/codes.js'
import { type Budget, shareOf, toMs } from '../rate-limit/budgets.js'

/** The two budgets, by their RATE_LIMITS names. */
export const AUTH_FAILURE_BUDGETS = {
  /** Per (client id, address) pair. */
  authFailures: { max: 10, window: '1 minute' },
  /** Per address, whatever the client ids. */
  authFailuresPerAddress: { max: 20, window: '1 minute' },
} as const satisfies Record<string, Budget>

export interface FailureGuard {
  /**
   * Counts an authentication attempt of `clientId` from this request's address as a failure of
   * both budgets before the secret is checked: the 429 to answer when a budget is spent, else the
   * attempt, whose count `release()` gives back unless the authentication fails.
   */
  attempt(request: FastifyRequest, clientId: string): Promise<AppError | Attempt>
}

export interface Attempt {
  /** The authentication did not fail (it succeeded, or could not be checked): not a failure. */
  release(): void
}

/** A fixed-length stand-in for a client id in a counter key (ids come from the caller). */
const digest = (clientId: string): string => createHash('sha256').update(clientId).digest('base64url').slice(0, 22)

/**
 * Counted before the check, not after it: an attacker's concurrent guesses would otherwise all
 * pass a check made while none of them had failed yet. These are security budgets (exact while
 * Redis answers: every attempt waits for its own count, README "Scaling out"). A client's own
 * attempts in flight count until they succeed, so more concurrent token requests of one client
 * from one address than `authFailures` allows may get 429 (temporarily_unavailable).
 */
export function failureGuard(app: FastifyInstance): FailureGuard {
  const budgets = Object.entries(AUTH_FAILURE_BUDGETS).map(([name, declared]) => {
    const { max, window } = app.budgets.resolve(name, declared)
    return { name, max, windowMs: toMs(window), share: shareOf(name, max), perPair: name === 'authFailures' }
  })
  return {
    async attempt(request, clientId) {
      const address = `addr:${clientAddress(request)}`
      const counted = await Promise.all(
        budgets.map(async (b) => {
          const caller = b.perPair ? `${digest(clientId)}:${address}` : address
          return { ...b, caller, verdict: await app.counters.spend(b.name, caller, b.max, b.windowMs, b.share) }
        }),
      )
      const release = () => {
        for (const c of counted) if (c.verdict.allowed) app.counters.refund(c.name, c.caller, c.verdict.window)
      }
      // The budgets spent, the one that keeps the client waiting longest first.
      const spent = counted
        .filter((c) => !c.verdict.allowed)
        .map((c) => ({ perPair: c.perPair, max: c.max, wait: Math.max(1, Math.ceil(c.verdict.ttl / 1000)) }))
        .sort((a, b) => b.wait - a.wait)
      const budget = spent[0]
      if (!budget) return { release }
      release()
      return new AppError(
        'rate_limited',
        budget.perPair
          ? 'Too many failed authentications of this client from this address.'
          : 'Too many failed client authentications from this address.',
        `check the client credentials, then retry after ${budget.wait} seconds`,
        {
          'retry-after': String(budget.wait),
          'x-ratelimit-limit': String(budget.max),
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(budget.wait),
        },
      )
    },
  }
}
