// Failed client authentications at the token endpoint, counted in the rate limiter's store (so
// every instance shares them with Redis). Client ids are not secret, so failures are never
// counted per client id alone (a stranger could then lock the rightful client out from
// anywhere): they are counted per (client id, address) pair, which slows down guessing one
// client's secret, and per address, which bounds guessing across client ids. The rightful
// client, calling from its own address, is never refused for someone else's failures.
import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError } from '../errors/codes.js'
import type { Budget } from '../rate-limit/budgets.js'
import { clientAddress } from '../rate-limit/index.js'

/** The two budgets, by their RATE_LIMITS names. */
export const AUTH_FAILURE_BUDGETS = {
  /** Per (client id, address) pair. */
  authFailures: { max: 10, window: '1 minute' },
  /** Per address, whatever the client ids. */
  authFailuresPerAddress: { max: 20, window: '1 minute' },
} as const satisfies Record<string, Budget>

export interface FailureGuard {
  /** The 429 to answer when a failure budget of this client id from this address is spent. */
  refusal(request: FastifyRequest, clientId: string): Promise<AppError | undefined>
  record(request: FastifyRequest, clientId: string): Promise<void>
}

declare module 'fastify' {
  interface FastifyRequest {
    authAttemptClient: string
  }
}

/** A fixed-length stand-in for a client id in a counter key (ids come from the caller). */
const digest = (clientId: string): string => createHash('sha256').update(clientId).digest('base64url').slice(0, 22)

export function failureGuard(app: FastifyInstance): FailureGuard {
  app.decorateRequest('authAttemptClient', '')
  const counters = Object.entries(AUTH_FAILURE_BUDGETS).map(([name, declared]) => {
    const { max, window } = app.budgets.resolve(name, declared)
    const perPair = name === 'authFailures'
    const limiter = app.createRateLimit({
      max,
      timeWindow: window,
      keyGenerator: (req) =>
        perPair ? `authfail:pair:${digest(req.authAttemptClient)}:${clientAddress(req)}` : `authfail:addr:${clientAddress(req)}`,
    })
    return { perPair, limiter }
  })
  return {
    async refusal(request, clientId) {
      request.authAttemptClient = clientId
      const seen = await Promise.all(
        counters.map(async (c) => ({ perPair: c.perPair, result: await c.limiter(request, { increment: false }) })),
      )
      // The budgets spent, the one that keeps the client waiting longest first.
      const spent = seen
        .flatMap(({ perPair, result }) =>
          !result.isAllowed && result.remaining === 0 ? [{ perPair, max: result.max, wait: Math.max(1, result.ttlInSeconds) }] : [],
        )
        .sort((a, b) => b.wait - a.wait)
      const budget = spent[0]
      if (!budget) return undefined
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
    async record(request, clientId) {
      request.authAttemptClient = clientId
      for (const { limiter } of counters) await limiter(request)
    },
  }
}
