// When a failed delivery is tried again: exponential backoff with jitter. With the defaults
// (first retry after 10 s, 10 attempts) the retries come after about 10 s, 30 s, 1.5 min,
// 4.5 min, 13.5 min, 40 min, 2 h, 6 h and 18 h: the last attempt about 27 hours after the
// first, then the event is kept as a dead letter. The jitter (±20 %) spreads the retries of
// events that failed together, so a receiver coming back is not hit by all of them at once.

export interface RetryPolicy {
  /** Delay before the first retry, in ms. */
  firstRetryMs: number
  /** Attempts in all (the first included) before the event is a dead letter. */
  maxAttempts: number
}

export const BACKOFF_FACTOR = 3
export const JITTER = 0.2

/**
 * How long to wait after the `attempts`-th failed attempt (1 for the first), or undefined when
 * that was the last one. `random` is in [0, 1).
 */
export function retryDelay(policy: RetryPolicy, attempts: number, random: () => number = Math.random): number | undefined {
  if (attempts >= policy.maxAttempts) return undefined
  const nominal = policy.firstRetryMs * BACKOFF_FACTOR ** (attempts - 1)
  return Math.round(nominal * (1 - JITTER + 2 * JITTER * random()))
}
