// Rate-limit budgets by name: each spec operation's `x-rate-limit` (and its anonymous variant),
// budgets that plugins declare for routes outside the spec (the MCP endpoint), and the default for
// everything else, each overridable by RATE_LIMITS. A RATE_LIMITS name that no budget has is
// refused at start-up, naming it, instead of being silently ignored.
import { parse } from '@lukeed/ms'
import type { FastifyRequest } from 'fastify'
import { ConfigError, type RateLimitOverride } from '../../config.js'
import type { Operation } from '../spec/document.js'

export interface Budget {
  max: number
  window: string
}

type PerKey<T> = T | ((request: FastifyRequest, key: string) => Promise<T>)

/** What @fastify/rate-limit takes as a route's `config.rateLimit`, with the budget's name (store.ts). */
export interface RouteLimit {
  max: PerKey<number>
  timeWindow: PerKey<number> | string
  /** The budget a key counts against: its name in RATE_LIMITS and in Redis keys. */
  budget: string | ((key: string) => string)
}

/** Budget for routes outside the spec's operations (docs, discovery, unknown paths): `default`. */
export const DEFAULT_BUDGET: Budget = { max: 300, window: '1 minute' }

const isAnonymousKey = (key: string): boolean => key.startsWith('addr:')

/**
 * The security budgets: failed client authentications, and what anonymous callers may store
 * (`<operationId>Anonymous`, `requestConsultationAnonymous`). They are counted exactly while Redis
 * answers: every request waits for its own token (README "Scaling out").
 */
export const isSecurityBudget = (name: string): boolean => name.startsWith('authFailures') || name.endsWith('Anonymous')

/**
 * How many requests of a pair an instance may let through on credit, and leases ahead: 2 % of an
 * ordinary budget (so N instances overshoot it by at most N × 2 %), none of a security budget.
 */
export const shareOf = (name: string, max: number): number => (isSecurityBudget(name) ? 0 : Math.floor(max / 50))

export class Budgets {
  private readonly known = new Set<string>(['default'])

  constructor(private readonly overrides: Readonly<Record<string, RateLimitOverride>>) {}

  /** A declared budget with its configuration override applied; records the name as known. */
  resolve(name: string, declared: Budget): Budget {
    this.known.add(name)
    const o = this.overrides[name] ?? {}
    return { max: o.max ?? declared.max, window: o.window ?? declared.window }
  }

  /**
   * An operation's limit from its `x-rate-limit`. With an anonymous alternative, requests without
   * a verified client (keyed by address) get the `<operationId>Anonymous` budget instead.
   */
  forOperation(op: Operation, allowAnonymous: boolean): RouteLimit | undefined {
    const declared = op['x-rate-limit']
    if (!declared) return undefined
    const own = this.resolve(op.operationId, declared)
    const name = op.operationId
    if (declared.anonymous_max === undefined) return { max: own.max, timeWindow: own.window, budget: name }
    const anonymousName = `${name}Anonymous`
    const anonymous = this.resolve(anonymousName, { max: declared.anonymous_max, window: own.window })
    if (!allowAnonymous) return { max: own.max, timeWindow: own.window, budget: name }
    const ownMs = toMs(own.window)
    const anonymousMs = toMs(anonymous.window)
    return {
      max: async (_req, key) => (isAnonymousKey(key) ? anonymous.max : own.max),
      timeWindow: async (_req, key) => (isAnonymousKey(key) ? anonymousMs : ownMs),
      budget: (key) => (isAnonymousKey(key) ? anonymousName : name),
    }
  }

  names(): string[] {
    return [...this.known].sort()
  }
}

/**
 * Every budget name an app of this spec has: `default`, each operation with an `x-rate-limit`
 * (and its `<operationId>Anonymous` variant when it declares `anonymous_max`), and the named budgets
 * the plugins declare (`others`). app.ts checks RATE_LIMITS against it before any plugin creates
 * anything; the Budgets the plugins fill must end with exactly these names (a test holds it).
 */
export function budgetNames(operations: Iterable<Operation>, others: Iterable<string>): string[] {
  const names = new Set(['default', ...others])
  for (const op of operations) {
    const declared = op['x-rate-limit']
    if (!declared) continue
    names.add(op.operationId)
    if (declared.anonymous_max !== undefined) names.add(`${op.operationId}Anonymous`)
  }
  return [...names].sort()
}

/** Refuses RATE_LIMITS names that are no budget's, naming them and the budgets there are. */
export function checkRateLimitNames(overrides: Readonly<Record<string, RateLimitOverride>>, names: readonly string[]): void {
  const unknown = Object.keys(overrides).filter((name) => !names.includes(name))
  if (unknown.length > 0) {
    throw new ConfigError(
      `Invalid configuration: RATE_LIMITS names ${unknown.map((n) => `"${n}"`).join(', ')}, which no rate limit has; the names are: ${names.join(', ')}`,
    )
  }
}

/** `1 minute`, `30 seconds`, `2h` → milliseconds, read as @fastify/rate-limit reads windows. */
export function toMs(window: string): number {
  const ms = parse(window)
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0) {
    throw new Error(`cannot read the rate-limit window "${window}"; write e.g. "1 minute" or "30 seconds"`)
  }
  return ms
}
