// Where webhooks may go: an https URL whose host resolves only to public addresses, so an endpoint
// can never make the server call into its own network (SSRF). Checked when an endpoint is added
// and again at every connection (DNS can change between the two): the delivery socket connects
// to the very address this check approved. WEBHOOKS_ALLOW_PRIVATE lifts both rules.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { isPublicAddress, parseAddress } from '../../lib/address.js'

export { isPublicAddress }

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

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1')

/** An IP literal, never looked up. */
const isLiteral = (host: string): boolean => parseAddress(host) !== undefined

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
  const addresses = isLiteral(host)
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
  if (!allowPrivate && isLiteral(host) && !isPublicAddress(host)) throw refuse(host, host)
}
