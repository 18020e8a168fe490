// One HTTP exchange of the contract run, with node:http(s): unlike fetch, it keeps the answer a
// server sends before it has read the whole body (413, and the errors answered before the body is
// read, which close the connection), and sends headers of any size (431).
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'

export interface Exchange {
  method: string
  /** Path and query, relative to the base URL. */
  url: string
  headers?: Record<string, string>
  body?: string | Buffer
}

export interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** Sends one request to `base` + `url`; resolves with the answer, rejects when there is none within `timeoutMs`. */
export function send(base: string, ex: Exchange, timeoutMs = 15_000): Promise<Answer> {
  const target = new URL(ex.url, base.endsWith('/') ? base : `${base}/`)
  // The base URL's own path (a deployment behind a path prefix) comes before the request's.
  const prefix = new URL(base).pathname.replace(/\/$/, '')
  target.pathname = `${prefix}${ex.url.split('?')[0]}`
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest
  const body = ex.body === undefined ? undefined : Buffer.from(ex.body)
  return new Promise((resolve, reject) => {
    let answered = false
    const req = request(
      target,
      {
        method: ex.method,
        headers: { ...ex.headers, ...(body && { 'content-length': String(body.length) }) },
        timeout: timeoutMs,
      },
      (res) => {
        answered = true
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') })
        res.on('end', done)
        // A connection closed right after the answer (errors answered before the body is read).
        res.on('close', done)
        res.on('error', done)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    // A server that answers before reading the body and closes makes the rest of the write fail:
    // what counts is its answer.
    req.on('error', (err) => {
      if (!answered) reject(err)
    })
    req.end(body)
  })
}
