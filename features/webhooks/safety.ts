// Where webhooks may go: an https URL whose host resolves only to public addresses, so an endpoint
// can never make the server call into its own network (SSRF). Checked when an endpoint is added
// and again at every connection (DNS can change between the two): the delivery socket connects
// to the very address this check approved. WEBHOOKS_ALLOW_PRIVATE lifts both rules.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { createRequire } from 'node:module'
import { isIP } from 'node:net'
import type * as IpAddr from 'ipaddr.js'

// ipaddr.js (the address classifier proxy-addr and Express use) is CommonJS with `export =`
// typings that TypeScript lets an ES module import only through require.
const ipaddr = createRequire(import.meta.url)('ipaddr.js') as typeof IpAddr

/**
 * A target the rules refuse; its message says which rule, `reason` says it briefly (for logs and
 * status). `allowedByPrivate`: WEBHOOKS_ALLOW_PRIVATE=true would allow it (an `http://` URL, a
 * private address), so a delivery refused for it is held back by this server's configuration.
 */
export class UnsafeTarget extends Error {
  constructor(
    message: string,
    readonly reason: string,
    readonly allowedByPrivate = false,
  ) {
    super(message)
  }
}

/** What an operator reads wherever a URL is refused for a rule that WEBHOOKS_ALLOW_PRIVATE lifts. */
export const ALLOW_PRIVATE_HINT =
  'set WEBHOOKS_ALLOW_PRIVATE=true to allow it (for a receiver inside your own network), for this command and for the server alike'

/** An IPv4 address is public when ipaddr.js files it under no special range (private, loopback, link-local, CGNAT, reserved, documentation…). */
const isPublicIPv4 = (address: IpAddr.IPv4): boolean => address.range() === 'unicast'

/**
 * An IPv6 address's eight 16-bit groups, read from its canonical text: the WHATWG URL parser's,
 * which reads a dotted tail as the low 32 bits (`::127.0.0.1` is `::7f00:1`), where ipaddr.js
 * would take it for the IPv4-mapped `::ffff:7f00:1`. A zone (`%eth0`) is dropped: it only
 * qualifies link-local addresses, which are refused anyway.
 */
function ipv6Groups(address: string): number[] | undefined {
  try {
    const canonical = new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname.slice(1, -1)
    return ipaddr.IPv6.parse(canonical).parts
  } catch {
    return undefined
  }
}

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

/**
 * Public unicast only: not private, loopback, link-local, carrier-grade NAT, multicast, reserved,
 * documentation… An IPv6 address is public only in global unicast space (2000::/3) and outside
 * every special range there (Teredo 2001::/32 and the rest of 2001::/23, 6to4 2002::/16,
 * documentation…). The two forms that stand for an IPv4 address on the way out are judged by
 * it: IPv4-mapped (::ffff:0:0/96, what a dual-stack socket connects to as IPv4) and NAT64's
 * well-known prefix (64:ff9b::/96, which RFC 6052 keeps for public IPv4 addresses). Every other
 * form carrying an IPv4 address is refused whatever it carries: IPv4-compatible (::/96,
 * deprecated), SIIT (::ffff:0:0:0/96), local-use NAT64 (64:ff9b:1::/48), 6to4 and Teredo; and so
 * is what lies outside 2000::/3 (site-local fec0::/10, unique-local, discard-only 100::/64…).
 */
export function isPublicAddress(address: string): boolean {
  if (ipaddr.IPv4.isValid(address)) return isPublicIPv4(ipaddr.IPv4.parse(address))
  const g = ipv6Groups(address)
  if (!g) return false
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return isPublicIPv4(ipv4Of(g6, g7))
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isPublicIPv4(ipv4Of(g6, g7))
  const globalUnicast = (g0 & 0xe000) === 0x2000
  return globalUnicast && new ipaddr.IPv6(g).range() === 'unicast'
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1')

/** The URL, if its form is allowed (https; http only with allowPrivate); throws UnsafeTarget otherwise. */
export function parseTarget(url: string, allowPrivate: boolean): URL {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    throw new UnsafeTarget(`${JSON.stringify(url)} is not an absolute URL`, 'refused: not a URL')
  }
  const schemes = allowPrivate ? ['https:', 'http:'] : ['https:']
  if (!schemes.includes(target.protocol)) {
    const scheme = target.protocol.replace(':', '')
    if (scheme === 'http') {
      throw new UnsafeTarget(`webhook URLs must be https (got http): ${ALLOW_PRIVATE_HINT}`, 'refused: http is not allowed', true)
    }
    throw new UnsafeTarget(
      `webhook URLs must be https${allowPrivate ? ' or http' : ''} (got ${scheme})`,
      `refused: ${scheme} is not allowed`,
    )
  }
  if (target.username || target.password) {
    throw new UnsafeTarget('webhook URLs must not carry credentials; the signature authenticates', 'refused: credentials in the URL')
  }
  return target
}

function refuse(host: string, address: string): UnsafeTarget {
  return new UnsafeTarget(
    `${host} resolves to ${address}, which is not a public address: ${ALLOW_PRIVATE_HINT}`,
    'refused: not a public address',
    true,
  )
}

/** Every address the host resolves to, each checked; throws UnsafeTarget or the DNS error. */
export async function resolveTarget(target: URL, allowPrivate: boolean): Promise<string[]> {
  const host = bare(target.hostname)
  const addresses = isIP(host)
    ? [host]
    : await new Promise<string[]>((resolve, reject) =>
        dnsLookup(host, { all: true }, (err, found) => (err ? reject(err) : resolve(found.map((a) => a.address)))),
      )
  if (!allowPrivate) {
    const bad = addresses.find((a) => !isPublicAddress(a))
    if (bad) throw refuse(host, bad)
  }
  return addresses
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * A `lookup` for http.request that resolves the host and refuses it unless every address is
 * public: the socket then connects to an address this function approved (no DNS rebinding
 * between the check and the connection).
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (err, found) => {
      if (err) return callback(err, [])
      const bad = allowPrivate ? undefined : found.find((a) => !isPublicAddress(a.address))
      if (bad) return callback(refuse(hostname, bad.address), [])
      if (options.all) return callback(null, found)
      const first = found[0] as LookupAddress
      callback(null, first.address, first.family)
    })
  }
}

/** An IP literal in the URL is never looked up by Node, so it is checked here before connecting. */
export function checkLiteral(target: URL, allowPrivate: boolean): void {
  const host = bare(target.hostname)
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) throw refuse(host, host)
}
