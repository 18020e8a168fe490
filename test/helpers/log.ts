// A log destination for an app under test: every line the app writes, as written.
import { Writable } from 'node:stream'

export interface LogCapture {
  stream: Writable
  /** What was written, chunk by chunk. */
  raw: string[]
  /** The lines written so far, parsed. */
  lines(): { level: number; msg: string; [key: string]: unknown }[]
}

export function captureLog(): LogCapture {
  const raw: string[] = []
  const stream = new Writable({
    write(chunk, _enc, done) {
      raw.push(chunk.toString())
      done()
    },
  })
  return {
    stream,
    raw,
    lines: () =>
      raw
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  }
}
