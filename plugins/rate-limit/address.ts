// Addresses as budgets count them. One IPv6 subscriber usually holds a whole /64 (2^64
// addresses), so counting single IPv6 addresses would let one caller spread over endless
// budgets: an IPv6 address counts as its /64 network, as @fastify/rate-limit's own key does.
import { isIPv6 } from 'node:net'

/** The eight 16-bit groups of an IPv6 address, `::` expanded (an embedded IPv4 tail as two groups). */
function groups(ip: string): string[] {
  const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip)
  const text = tail
    ? `${ip.slice(0, tail.index)}${((Number(tail[1]) << 8) | Number(tail[2])).toString(16)}:${((Number(tail[3]) << 8) | Number(tail[4])).toString(16)}`
    : ip
  const [head = '', rest] = text.split('::')
  const left = head ? head.split(':') : []
  const right = rest ? rest.split(':') : []
  const zeros = rest === undefined ? [] : Array(8 - left.length - right.length).fill('0')
  return [...left, ...zeros, ...right].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
}

/** IPv4 as it is (also when mapped into IPv6, `::ffff:a.b.c.d`); IPv6 as `<its /64>::/64`. */
export function addressOf(ip: string): string {
  if (!isIPv6(ip)) return ip
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped?.[1]) return mapped[1]
  return `${groups(ip.split('%')[0] ?? ip)
    .slice(0, 4)
    .join(':')}::/64`
}
