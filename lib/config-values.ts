// Parsers of the configuration values that have a grammar of their own: RATE_LIMITS and TRUST_PROXY.
import { parse as parseDuration } from '@lukeed/ms'
import { parseAddress, proxyRange } from './address.js'
import { ConfigError } from './settings.js'

export interface RateLimitOverride {
  max?: number
  window?: string
}

/**
 * `RATE_LIMITS="getProjects=1200/1 minute, submitLead=100"`: per budget (an operationId, or another
 * name listed in the README), a max and optionally a window (`30 seconds`, `1 minute`, `1 hour`).
 * Whether each name exists is checked against the spec when the app is built.
 */
export function parseRateLimits(text: string): Record<string, RateLimitOverride> {
  const out: Record<string, RateLimitOverride> = {}
  for (const part of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z]+)\s*=\s*(\d+)\s*(?:\/\s*(.+))?$/.exec(part)
    if (!m?.[1] || !m[2]) {
      throw new ConfigError(`RATE_LIMITS: cannot read "${part}"; write name=max or name=max/window, e.g. getProjects=1200/1 minute`)
    }
    const max = Number(m[2])
    // The spec's bounds of X-RateLimit-Limit and X-RateLimit-Reset.
    if (max > MAX_RATE_LIMIT) throw new ConfigError(`RATE_LIMITS: ${m[1]}=${m[2]} is over the largest budget, ${MAX_RATE_LIMIT}`)
    const window = m[3]?.trim()
    if (window !== undefined) {
      const ms = parseDuration(window)
      if (ms === undefined || !(ms > 0) || ms > MAX_RATE_WINDOW_MS) {
        throw new ConfigError(`RATE_LIMITS: ${m[1]}'s window "${window}" must be a duration of at most 1 day, e.g. 1 minute`)
      }
    }
    out[m[1]] = window !== undefined ? { max, window } : { max }
  }
  return out
}

/** An email address, loosely (the SMTP server has the last word): no spaces, commas or angle brackets. */
export const EMAIL = '[^\\s@,<>]+@[^\\s@,<>]+'

/** The largest budget and window RATE_LIMITS may set (the spec bounds the rate-limit headers by them). */
export const MAX_RATE_LIMIT = 1_000_000_000
const MAX_RATE_WINDOW_MS = 24 * 60 * 60 * 1000

export const list = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

/** What TRUST_PROXY looks like, in the messages that refuse a value. */
export const TRUST_PROXY_EXAMPLE = 'TRUST_PROXY=10.0.0.0/8,192.168.1.5'

/** proxy-addr's names of address ranges (Fastify's trust list accepts them beside addresses). */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** An address, or a CIDR range of one (`10.0.0.0/8`, `fd00::/8`) with a prefix that does not cover every address. */
function trustEntryProblem(entry: string): string | undefined {
  if (PROXY_RANGE_NAMES.has(entry)) return undefined
  const [address = '', prefix, extra] = entry.split('/')
  const parsed = parseAddress(address)
  if (!parsed || parsed.zone !== undefined || extra !== undefined) return `"${entry}", which is not an IP address or a CIDR range`
  if (prefix === undefined) return undefined
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN
  const max = parsed.address.kind() === 'ipv4' ? 32 : 128
  if (!(bits <= max)) return `"${entry}", whose prefix length is not 1 to ${max}`
  if (bits === 0) return `"${entry}", which covers every address (any client could write its own)`
  return undefined
}

/**
 * The address family whose every address a trust list spans, as proxy-addr matches clients against
 * it, or undefined. Ranges count together (`0.0.0.0/1,128.0.0.0/1` is every IPv4 address), and an
 * IPv4-mapped IPv6 range of prefix 96 or more spans IPv4 clients (`::ffff:0:0/96` is every one);
 * a mapped range of a shorter prefix matches no client at all.
 */
function familyCovered(entries: string[]): 'IPv4' | 'IPv6' | undefined {
  const spans: Record<'IPv4' | 'IPv6', [bigint, bigint][]> = { IPv4: [], IPv6: [] }
  for (const entry of entries) {
    if (PROXY_RANGE_NAMES.has(entry)) continue
    const [address = '', prefix] = entry.split('/')
    const range = proxyRange(address, prefix === undefined ? undefined : Number(prefix))
    if (range) spans[range.family].push([range.start, range.end])
  }
  for (const family of ['IPv4', 'IPv6'] as const) {
    const end = 1n << (family === 'IPv4' ? 32n : 128n)
    let reached = 0n
    for (const [start, stop] of spans[family].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      if (start > reached) break
      if (stop > reached) reached = stop
    }
    if (reached >= end) return family
  }
  return undefined
}

/**
 * `TRUST_PROXY`: the load balancers' addresses or CIDR ranges, comma-separated. The client's address
 * is then the rightmost X-Forwarded-For hop that is not one of them (what the balancer appended),
 * never one the client wrote. `true`, a range covering everything, or a hop count would let a
 * client choose its own address (a hop count cannot tell the balancer from a client that reaches
 * the instance directly, and Fastify 5 trusts no hop at all when given one): refused, showing the
 * list form.
 */
export function parseTrustProxy(text: string): false | string[] {
  const value = text.trim()
  if (value === '' || value.toLowerCase() === 'false') return false
  const refuse = (why: string) =>
    new ConfigError(
      `Invalid configuration: TRUST_PROXY=${value} ${why}; name the load balancer's addresses or CIDR ranges, comma-separated, e.g. ${TRUST_PROXY_EXAMPLE} (the client's address is then the rightmost X-Forwarded-For hop not in the list)`,
    )
  if (value.toLowerCase() === 'true' || value === '*') {
    throw refuse(`would trust every X-Forwarded-For hop, including the ones a client writes itself`)
  }
  if (/^\d+$/.test(value)) {
    throw refuse(`is a hop count, which cannot tell the load balancer from a client that connects directly`)
  }
  const entries = list(value)
  for (const entry of entries) {
    const problem = trustEntryProblem(entry)
    if (problem) throw refuse(`lists ${problem}`)
  }
  const covered = familyCovered(entries)
  if (covered) {
    const what = entries.length === 1 ? `"${entries[0]}", which covers` : 'ranges that together cover'
    throw refuse(`lists ${what} every ${covered} address (any client could write its own)`)
  }
  return entries
}

/** STUDIO_TIME_ZONE: an IANA time zone name the runtime knows (`Europe/Rome`, `UTC`), as written. */
export function parseTimeZone(text: string): string {
  const zone = text.trim()
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: zone })
  } catch {
    throw new ConfigError(
      `Invalid configuration: STUDIO_TIME_ZONE must be a time zone name such as Europe/Rome, America/New_York or UTC (got ${JSON.stringify(text)})`,
    )
  }
  return zone
}
