// IP addresses, parsed once, by ipaddr.js (what proxy-addr, and so Fastify's trust list, uses):
// the budget key of a caller (an IPv6 address counts as its /64), whether an address is public
// (where webhooks may go) and how proxy-addr reads a trust list (TRUST_PROXY's checks).
import { createRequire } from 'node:module'
import type * as IpAddr from 'ipaddr.js'

// ipaddr.js is CommonJS with `export =` typings that an ES module imports only through require.
const ipaddr = createRequire(import.meta.url)('ipaddr.js') as typeof IpAddr

export type Address = IpAddr.IPv4 | IpAddr.IPv6

/**
 * An IP literal: IPv4 as four decimal octets (no `127.1`, `0x7f.0.0.1` or leading zeros), or
 * IPv6 (RFC 4291, an optional zone after `%`). A dotted IPv4 tail is read as the low 32 bits
 * (`::127.0.0.1` is `::7f00:1`, as the kernel and the WHATWG URL parser read it), where
 * ipaddr.js alone would take it for the IPv4-mapped `::ffff:7f00:1`: the text goes through the
 * URL parser's IPv6 reading first.
 */
export function parseAddress(text: string): { address: Address; zone?: string } | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return { address: ipaddr.IPv4.parse(text) }
  const [bare = '', zone, extra] = text.split('%')
  if (extra !== undefined || zone === '' || !ipaddr.IPv6.isValid(bare)) return undefined
  let canonical: string
  try {
    canonical = new URL(`http://[${bare}]/`).hostname.slice(1, -1)
  } catch {
    return undefined
  }
  return { address: ipaddr.IPv6.parse(canonical), ...(zone !== undefined && { zone }) }
}

const isIPv6 = (address: Address): address is IpAddr.IPv6 => address.kind() === 'ipv6'

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, however written) stands for. */
const unmapped = (address: Address): Address => (isIPv6(address) && address.isIPv4MappedAddress() ? address.toIPv4Address() : address)

/**
 * Addresses as budgets count them. One IPv6 subscriber usually holds a whole /64 (2^64
 * addresses), so counting single IPv6 addresses would let one caller spread over endless
 * budgets: an IPv6 address counts as `<its /64>::/64`, as @fastify/rate-limit's own key does.
 * IPv4 is itself, also when mapped into IPv6. Text that is no address is its own key.
 */
export function addressOf(ip: string): string {
  const parsed = parseAddress(ip)
  if (!parsed) return ip
  const address = unmapped(parsed.address)
  if (!isIPv6(address)) return address.toString()
  return `${address.parts
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}

/** The caller's address as budgets count it: IPv4, or an IPv6 address's /64 network. */
export const clientAddress = (request: { ip: string }): string => addressOf(request.ip)

/** An IPv4 address is public when ipaddr.js files it under no special range (private, loopback, link-local, CGNAT, reserved, documentation…). */
const isPublicIPv4 = (address: IpAddr.IPv4): boolean => address.range() === 'unicast'

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
 * A zone only qualifies link-local addresses, which are refused anyway.
 */
export function isPublicAddress(text: string): boolean {
  const address = parseAddress(text)?.address
  if (!address) return false
  if (!isIPv6(address)) return isPublicIPv4(address)
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = address.parts
  if (address.isIPv4MappedAddress()) return isPublicIPv4(address.toIPv4Address())
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isPublicIPv4(ipv4Of(g6, g7))
  const globalUnicast = (g0 & 0xe000) === 0x2000
  return globalUnicast && address.range() === 'unicast'
}

/**
 * A range of a trust list as proxy-addr reads it (ipaddr.parse: `::127.0.0.1` is IPv4-mapped
 * there), so that what is checked is what Fastify will match clients against. An IPv4-mapped
 * range of prefix 96 or more is the IPv4 range it maps (`::ffff:0:0/96` is every IPv4 client); a
 * mapped range of a shorter prefix matches no client at all (undefined).
 */
export function proxyRange(
  address: string,
  prefix: number | undefined,
): { family: 'IPv4' | 'IPv6'; start: bigint; end: bigint } | undefined {
  const ip = ipaddr.parse(address)
  let bits = prefix ?? (ip.kind() === 'ipv4' ? 32 : 128)
  let bytes = ip.toByteArray()
  let family: 'IPv4' | 'IPv6' = ip.kind() === 'ipv4' ? 'IPv4' : 'IPv6'
  if (isIPv6(ip) && ip.isIPv4MappedAddress()) {
    if (bits < 96) return undefined
    family = 'IPv4'
    bits -= 96
    bytes = bytes.slice(12)
  }
  const width = BigInt(bytes.length * 8)
  const value = bytes.reduce((n, byte) => (n << 8n) | BigInt(byte), 0n)
  const size = 1n << (width - BigInt(bits))
  const start = value - (value % size)
  return { family, start, end: start + size }
}

/** Whether a listener's host is this machine only: `localhost`, or a loopback address (127.0.0.0/8, ::1, mapped forms). */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  const parsed = parseAddress(host.replace(/^\[(.*)\]$/, '$1'))
  return parsed !== undefined && unmapped(parsed.address).range() === 'loopback'
}
