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

/**
 * IPv4 as it is (also when mapped into IPv6, `::ffff:a.b.c.d`, however it is written: a balancer
 * may write `::ffff:c000:201`); IPv6 as `<its /64>::/64`.
 */
export function addressOf(ip: string): string {
  if (!isIPv6(ip)) return ip
  const g = groups(ip.split('%')[0] ?? ip)
  if (g.slice(0, 5).every((x) => x === '0') && g[5] === 'ffff') {
    const high = Number.parseInt(g[6] ?? '0', 16)
    const low = Number.parseInt(g[7] ?? '0', 16)
    return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
  }
  return `${g.slice(0, 4).join(':')}::/64`
}

/** The caller's address as budgets count it: IPv4, or an IPv6 address's /64 network. */
export const clientAddress = (request: { ip: string }): string => addressOf(request.ip)
