// The status table of `studio webhooks status` and `studio email status` (scripts/deliveries.ts):
// what an operator reads of each endpoint.
import t from 'tap'
import type { EndpointStatus } from '../../features/webhooks/reports.js'
import { printStatus } from '../../scripts/deliveries.js'

const now = new Date('2026-11-26T12:00:00.000Z')
const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000).toISOString()

function endpoint(over: Partial<EndpointStatus>): EndpointStatus {
  return {
    id: 'we_1',
    kind: 'webhook',
    url: 'https://crm.example/hook',
    disabled_at: null,
    disabled_reason: null,
    failing_since: null,
    last_failure: null,
    last_failure_at: null,
    pending: 0,
    delivered: 10,
    dead: 0,
    oldest_pending: null,
    next_attempt_at: null,
    ...over,
  }
}

function row(e: EndpointStatus): Record<string, string> {
  const lines: string[] = []
  printStatus((line) => lines.push(line), [e], now)
  const [header = '', values = ''] = lines
  const names = header.split('\t')
  return Object.fromEntries(values.split('\t').map((v, i) => [names[i] ?? String(i), v]))
}

t.test('the last failure shows while the endpoint is failing, and not once it delivers again', async (t) => {
  const failing = row(endpoint({ failing_since: minutesAgo(30), last_failure: 'HTTP 503', last_failure_at: minutesAgo(2), pending: 4 }))
  t.equal(failing.state, 'failing for 30m')
  t.equal(failing['last failure'], 'HTTP 503 (2m ago)')
  const recovered = row(endpoint({ failing_since: null, last_failure: 'HTTP 503', last_failure_at: minutesAgo(90) }))
  t.equal(recovered.state, 'active')
  t.equal(recovered['last failure'], '-', 'a failure before the endpoint delivered again is history')
})
