// Access tokens this instance has already verified, keyed by the exact token text. A consumer sends
// the same token for up to an hour; its EdDSA signature and claims are checked once, and later
// requests with the same bytes find the result in a Map (fast-jwt's own cache would hash every
// token with SHA-512 to build its key first). What can change while a token lives is checked on
// every request all the same: its expiry (an entry never outlives `exp`), the route's audience and
// the client's standing (client-status.ts). Only tokens that passed every check are kept, so a
// refused token is verified, and refused, afresh each time.
import { FifoMap } from 'toad-cache'

export interface VerifiedToken {
  readonly payload: Readonly<Record<string, unknown>>
  readonly clientId: string
  /** The staff member of a person's token; absent for a machine's. */
  readonly person?: string
  readonly scopes: ReadonlySet<string>
  /** The secret generation the token was issued under. */
  readonly generation: number
  /** Epoch ms after which the entry is no longer used: the token's expiry, or sooner. */
  readonly until: number
}

export class VerifiedTokens {
  /** First in, first out: the oldest entry goes first when full. */
  private readonly entries: FifoMap<VerifiedToken> | undefined

  /**
   * @param max how many tokens are kept (0: none)
   * @param ttlMs how long an entry is used at most, however long its token still lives
   */
  constructor(
    max: number,
    private readonly ttlMs: number,
  ) {
    this.entries = max > 0 ? new FifoMap<VerifiedToken>(max) : undefined
  }

  get(token: string, nowMs: number): VerifiedToken | undefined {
    const entry = this.entries?.get(token)
    if (entry === undefined) return undefined
    if (nowMs < entry.until) return entry
    this.entries?.delete(token)
    return undefined
  }

  /** Keeps a token that passed every check; `exp` in epoch seconds, as in the token. */
  set(token: string, entry: Omit<VerifiedToken, 'until'>, exp: number, nowMs: number): VerifiedToken {
    const kept: VerifiedToken = { ...entry, until: Math.min(exp * 1000, nowMs + this.ttlMs) }
    this.entries?.set(token, kept)
    return kept
  }

  get size(): number {
    return this.entries?.size ?? 0
  }
}
