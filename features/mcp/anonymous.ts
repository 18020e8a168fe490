// The per-address budgets of tools that callers without a token may use (ToolModule.anonymous):
// named budgets in app.budgets (RATE_LIMITS overrides them by name), counted in the rate
// limiter's store, so that with Redis every instance spends the same budget. Keyed by the address
// as every budget counts it (clientAddress: an IPv6 address as its /64, which one subscriber
// usually holds whole, so that one caller cannot spread over 2^64 budgets).
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { clientAddress } from '../../lib/address.js'
import type { NamedBudget } from './tool.js'

/** Seconds until an anonymous call from this request's address is allowed again; 0: allowed now (and counted). */
export type AnonymousSpend = (request: FastifyRequest) => Promise<number>

export function anonymousBudget(app: FastifyInstance, declared: NamedBudget): AnonymousSpend {
  const budget = app.budgets.resolve(declared.name, declared)
  const limit = app.createRateLimit({
    max: budget.max,
    timeWindow: budget.window,
    keyGenerator: (request) => `${declared.name}:addr:${clientAddress(request)}`,
  })
  return async (request) => {
    const result = await limit(request)
    // `isAllowed` means "on the allow list" (none here); over the budget is `isExceeded`.
    return !result.isAllowed && result.isExceeded ? Math.max(1, result.ttlInSeconds) : 0
  }
}
