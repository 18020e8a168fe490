// Minimal typings for the parts of autocannon 9's programmatic API the benchmark uses
// (the package ships none, and @types/autocannon is not a dependency). Imported from ESM, the
// CommonJS module's default export is its module.exports: the autocannon function.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface Request {
    method?: string
    path?: string
    headers?: Record<string, string>
    body?: string | Buffer
    /** Called before every request when present: return the request to send. */
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request | undefined
  }

  export interface Options {
    url: string
    connections?: number
    duration?: number
    pipelining?: number
    timeout?: number
    method?: string
    headers?: Record<string, string>
    body?: string | Buffer
    requests?: Request[]
  }

  export interface Histogram {
    average: number
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p99: number
  }

  export interface Result {
    duration: number
    errors: number
    timeouts: number
    resets: number
    non2xx: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
    latency: Histogram
    requests: Histogram & { sent: number }
    throughput: Histogram
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {}

  export default function autocannon(options: Options): Instance
}
