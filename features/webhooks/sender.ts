// One delivery attempt over HTTP: a POST of the signed body, at most `timeoutMs` in all, no
// redirect followed, the answer's body read up to a few KiB and thrown away (never logged), and
// the connection made only to an address the safety rules approve.
import * as http from 'node:http'
import * as https from 'node:https'
import { Interrupted } from './channel.js'
import { checkLiteral, guardedLookup, parseTarget, UnsafeTarget } from './safety.js'

/** An attempt's time limit unless told otherwise (WEBHOOKS_TIMEOUT_SECONDS's default). */
export const DELIVERY_TIMEOUT_MS = 10_000
/** How much of a receiver's answer is read before the connection is dropped. */
export const MAX_RESPONSE_BYTES = 4096

/**
 * What an attempt came to: the receiver's status, or why there was none (`allowedByPrivate`: the
 * safety rules refused the URL, and WEBHOOKS_ALLOW_PRIVATE=true would have let it through).
 */
export type Sent = { status: number } | { error: string; allowedByPrivate?: true }

export interface SendOptions {
  allowPrivate: boolean
  timeoutMs?: number
  /** Aborts the attempt (shutdown): it then counts as not made. */
  signal?: AbortSignal
}

/** A short, log-safe reason for a failed connection (never a URL or a body). */
function failure(err: NodeJS.ErrnoException, timedOut: boolean): Sent {
  if (timedOut) return { error: 'timeout' }
  if (err instanceof UnsafeTarget) return err.allowedByPrivate ? { error: err.reason, allowedByPrivate: true } : { error: err.reason }
  return { error: reason(err) }
}

function reason(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused'
    case 'ECONNRESET':
      return 'connection reset'
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found'
    default:
      return err.code ? `connection failed (${err.code})` : 'connection failed'
  }
}

export function send(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<Sent> {
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS
  return new Promise((resolve, reject) => {
    let target: URL
    try {
      target = parseTarget(url, options.allowPrivate)
      checkLiteral(target, options.allowPrivate)
    } catch (err) {
      resolve(failure(err as NodeJS.ErrnoException, false))
      return
    }
    let timedOut = false
    const request = (target.protocol === 'https:' ? https : http).request(target, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        'user-agent': 'studio-api-webhooks',
      },
      lookup: guardedLookup(options.allowPrivate),
      agent: false,
    })
    const timer = setTimeout(() => {
      timedOut = true
      request.destroy()
    }, timeoutMs)
    const onAbort = () => request.destroy(new Interrupted('shutting down'))
    options.signal?.addEventListener('abort', onAbort, { once: true })
    const done = () => {
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', onAbort)
    }
    request.on('error', (err) => {
      done()
      if (err instanceof Interrupted) reject(err)
      else resolve(failure(err, timedOut))
    })
    request.on('response', (response) => {
      let read = 0
      const finish = () => {
        done()
        resolve({ status: response.statusCode ?? 0 })
      }
      response.on('data', (chunk: Buffer) => {
        read += chunk.length
        if (read > MAX_RESPONSE_BYTES) {
          response.destroy()
          finish()
        }
      })
      response.on('end', finish)
      response.on('error', finish)
    })
    request.end(body)
  })
}
