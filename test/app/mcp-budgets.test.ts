// The budgets of callers without a token count addresses as every budget does: IPv4 as it is,
// IPv6 as its /64 (one subscriber usually holds a whole /64, so counting single addresses would
// let one caller spread over 2^64 budgets). The anonymous consultation budget of MCP, /mcp's own
// budget, and the owner of an anonymous Idempotency-Key. Counters in the rate limiter's store:
// run with REDIS_URL (and DATABASE_URL) to count them in Redis (and store in PostgreSQL).
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { leadOf, testApp } from '../helpers/app.js'

const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

/** A tools/call of request_consultation without a token, from an address; its JSON-RPC result. */
async function consult(app: FastifyInstance, from: string, n: number) {
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    remoteAddress: from,
    headers: mcpHeaders,
    payload: {
      jsonrpc: '2.0',
      id: n,
      method: 'tools/call',
      params: { name: 'request_consultation', arguments: { ...leadOf(n), consent: true } },
    },
  })
  const data = /^data: (.*)$/m.exec(res.body)?.[1]
  return {
    status: res.statusCode,
    result: data ? (JSON.parse(data).result as { isError?: boolean; structuredContent?: { code?: string } }) : undefined,
  }
}

t.test('anonymous consultations: one budget per IPv6 /64, whichever addresses of it are used', async (t) => {
  const { app } = await testApp(t, { rateLimits: { requestConsultationAnonymous: { max: 3, window: '1 minute' } } })
  const sameNetwork = [
    '2001:db8:1:2::1',
    '2001:db8:1:2::2',
    '2001:db8:1:2:ffff:ffff:ffff:ffff',
    '2001:0db8:0001:0002:0000:0000:0000:0009',
    '2001:db8:1:2::abcd',
  ]
  const outcomes = []
  for (const [i, from] of sameNetwork.entries()) outcomes.push(await consult(app, from, i + 1))
  t.same(
    outcomes.map((o) => o.result?.isError === true),
    [false, false, false, true, true],
    'three calls from the /64 are stored, the next ones refused, whatever address of it they come from',
  )
  t.equal(outcomes[3]?.result?.structuredContent?.code, 'rate_limited', 'refused as rate_limited (retry later)')
  t.equal(await app.leads.count(), 3, 'three stored')

  const otherNetwork = await consult(app, '2001:db8:1:3::1', 10)
  t.notOk(otherNetwork.result?.isError, 'another /64 has its own budget')
  const ipv4 = await consult(app, '192.0.2.10', 11)
  t.notOk(ipv4.result?.isError, 'an IPv4 address its own')
  const mapped = await consult(app, '::ffff:192.0.2.10', 12)
  t.notOk(mapped.result?.isError, 'the same IPv4 address, mapped into IPv6, spends the same budget (second of three)')
  t.equal(await app.leads.count(), 6)
})

t.test('the /mcp budget without a token: per IPv6 /64 too', async (t) => {
  const { app } = await testApp(t, { rateLimits: { mcp: { max: 3, window: '1 minute' } } })
  const statuses = []
  for (const from of ['2001:db8:9:9::1', '2001:db8:9:9::2', '2001:db8:9:9::3', '2001:db8:9:9::4']) {
    statuses.push((await consult(app, from, 1)).status)
  }
  t.same(statuses, [200, 200, 200, 429], 'the fourth request from the /64 is over the budget')
  t.equal((await consult(app, '2001:db8:9:a::1', 2)).status, 200, 'another /64 is not')
})

t.test('an anonymous Idempotency-Key belongs to the /64, as the budgets count it', async (t) => {
  const { app } = await testApp(t, { leadsAllowAnonymous: true })
  const submit = (from: string) =>
    app.inject({
      method: 'POST',
      url: '/scripts/enquiry_backend.php',
      remoteAddress: from,
      headers: { 'content-type': 'application/json', 'idempotency-key': 'form-retry-1' },
      // The website form sends the person's consent; an anonymous submission needs it.
      payload: { ...leadOf(1), consent: true },
    })
  const first = await submit('2001:db8:5:5::10')
  t.equal(first.statusCode, 200, first.body)
  // A retry after the device's temporary IPv6 address changed (RFC 8981), within the same /64.
  const retry = await submit('2001:db8:5:5::20')
  t.equal(retry.statusCode, 200)
  t.same(retry.json(), first.json(), 'the retry gets the first receipt')
  t.equal(await app.leads.count(), 1, 'stored once')
  const elsewhere = await submit('2001:db8:5:6::10')
  t.not(elsewhere.json().id, first.json().id, 'the same key from another /64 is another caller')
})

t.test('every message counts against the /mcp budget, refused ones too (one message per request)', async (t) => {
  const { app } = await testApp(t, { rateLimits: { mcp: { max: 5, window: '1 minute' } } })
  const send = (payload: string) => app.inject({ method: 'POST', url: '/mcp', remoteAddress: '198.51.100.7', headers: mcpHeaders, payload })
  const statuses = []
  for (const payload of [
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    JSON.stringify({ jsonrpc: '2.0', id: 1, result: {} }),
    JSON.stringify([
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
    ]),
    '{"jsonrpc": ',
    JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/list' }),
    JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
  ]) {
    statuses.push((await send(payload)).statusCode)
  }
  t.same(statuses, [202, 202, 400, 400, 200, 429], 'a notification, a response, a batch (refused whole), bad JSON: each one of the five')
})
