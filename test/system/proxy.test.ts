// Behind a load balancer: a real API process that trusts only the balancer's address
// (TRUST_PROXY=127.0.0.9), a real reverse proxy in front of it that appends the connecting
// address to X-Forwarded-For (helpers/balancer.ts), and clients on addresses of their own that
// write whatever they like before the balancer's hop. Every per-address budget (anonymous leads,
// anonymous MCP consultations, failed client authentications) counts the hop the balancer
// appended, never a forged one; two real clients behind the balancer have budgets of their own;
// a client that reaches the instance directly is counted by its own address whatever it writes.
// On SQLite, and on PostgreSQL + Redis when DATABASE_URL and REDIS_URL are set (the counters live
// in Redis then, which the test checks).
import { randomBytes } from 'node:crypto'
import t, { type Test } from 'tap'
import { backend, freshSchemaUrl } from '../helpers/app.js'
import { BALANCER_ADDRESS, type Balancer, requestFrom, startBalancer } from '../helpers/balancer.js'
import { testdir } from '../helpers/folders.js'
import { type ServerProcess, sharedSecrets, startServer } from '../helpers/processes.js'

const LEAD = '/scripts/enquiry_backend.php'
/** Two real clients behind the balancer, and one that bypasses it. */
const ALICE = '127.0.0.5'
const BOB = '127.0.0.6'
const DIRECT = '127.0.0.7'

/** A forged X-Forwarded-For: a different made-up client on every request, and a hop of its own. */
const forged = (i: number) => `198.51.100.${i + 1}, 203.0.113.${i + 1}`

interface Setup {
  server: ServerProcess
  balancer: Balancer
  secrets: ReturnType<typeof sharedSecrets>
  redisPrefix: string | undefined
}

async function setup(t: Test): Promise<Setup> {
  const secrets = sharedSecrets()
  const env: Record<string, string> = {
    ...secrets,
    DATA_DIR: testdir(t, {}),
    TRUST_PROXY: BALANCER_ADDRESS,
    LEADS_ALLOW_ANONYMOUS: 'true',
  }
  let redisPrefix: string | undefined
  if (backend.databaseUrl) env.DATABASE_URL = await freshSchemaUrl(t, backend.databaseUrl)
  if (backend.redisUrl) {
    redisPrefix = `proxy-${randomBytes(4).toString('hex')}:`
    env.REDIS_URL = backend.redisUrl
    env.REDIS_PREFIX = redisPrefix
  }
  const server = await startServer(t, env)
  return { server, balancer: await startBalancer(t, server), secrets, redisPrefix }
}

const lead = (i: number) =>
  JSON.stringify({ name: `Prospect ${i}`, email: `p${i}@example.com`, phone: `+44 20 7946 ${String(i).padStart(4, '0')}`, consent: true })

/** POST an anonymous lead from `from` to `base`, with a forged X-Forwarded-For. */
const anonymousLead = (from: string, base: string, i: number) =>
  requestFrom(from, `${base}${LEAD}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': forged(i) },
    body: lead(i),
  })

/** request_consultation without a token, as one JSON-RPC call: 'stored', 'limited' or the error text. */
async function consultation(from: string, base: string, i: number): Promise<string> {
  const res = await requestFrom(from, `${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
      'x-forwarded-for': forged(i),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: i,
      method: 'tools/call',
      params: {
        name: 'request_consultation',
        arguments: {
          name: `Agent prospect ${i}`,
          email: `a${i}@example.com`,
          phone: `+44 20 7946 ${String(i).padStart(4, '0')}`,
          consent: true,
        },
      },
    }),
  })
  if (res.status !== 200) return `HTTP ${res.status} ${res.body}`
  const data = /^data: (.*)$/m.exec(res.body)?.[1] ?? res.body
  const result = (JSON.parse(data) as { result?: { isError?: boolean; content?: { text?: string }[] } }).result
  if (!result?.isError) return 'stored'
  const text = result.content?.[0]?.text ?? ''
  return /Too many request_consultation calls/.test(text) ? 'limited' : text
}

/** A client authentication with a wrong secret from `from` to `base`, with a forged X-Forwarded-For. */
const wrongSecret = (from: string, base: string, clientId: string, i: number) =>
  requestFrom(from, `${base}/api/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${clientId}:wrong-${i}`).toString('base64')}`,
      'x-forwarded-for': forged(i),
    },
    body: 'grant_type=client_credentials',
  })

const tally = (values: (string | number)[]) =>
  values.reduce<Record<string, number>>((acc, v) => {
    acc[v] = (acc[v] ?? 0) + 1
    return acc
  }, {})

t.test('a forged X-Forwarded-For behind a trusted balancer spends the real client’s budgets', async (t) => {
  const { server, balancer, secrets, redisPrefix } = await setup(t)

  t.test('anonymous leads: 10 a minute per real client, whatever it writes', async (t) => {
    const alice: number[] = []
    for (let i = 0; i < 15; i++) alice.push((await anonymousLead(ALICE, balancer.url, i)).status)
    t.same(tally(alice), { 200: 10, 429: 5 }, '15 leads with 15 forged addresses: 10 accepted, then 429')
    t.same(alice.slice(0, 10), Array(10).fill(200), 'the first 10 are accepted')

    const bob = await anonymousLead(BOB, balancer.url, 100)
    t.equal(bob.status, 200, 'another real client behind the balancer has a budget of its own')
    t.equal(bob.headers['x-ratelimit-remaining'], '9', 'counted from its own 10')

    const direct: number[] = []
    for (let i = 0; i < 12; i++) direct.push((await anonymousLead(DIRECT, server.url, 200 + i)).status)
    t.same(tally(direct), { 200: 10, 429: 2 }, 'a client that bypasses the balancer is counted by its own address')
  })

  t.test('anonymous MCP consultations: 10 a minute per real client, whatever it writes', async (t) => {
    const alice: string[] = []
    for (let i = 0; i < 15; i++) alice.push(await consultation(ALICE, balancer.url, 300 + i))
    t.same(tally(alice), { stored: 10, limited: 5 }, '15 consultations with 15 forged addresses: 10 stored')
    t.equal(await consultation(BOB, balancer.url, 400), 'stored', 'another real client behind the balancer has a budget of its own')
  })

  t.test('failed client authentications: throttled per real client, whatever it writes', async (t) => {
    const id = secrets.BOOTSTRAP_CLIENT_ID
    const alice: number[] = []
    for (let i = 0; i < 30; i++) alice.push((await wrongSecret(ALICE, balancer.url, id, i)).status)
    t.same(alice.slice(0, 10), Array(10).fill(401), 'the first 10 failures are answered 401 invalid_client')
    t.same(alice.slice(10), Array(20).fill(429), 'then every attempt is throttled (429), forged addresses or not')

    const bob = await wrongSecret(BOB, balancer.url, id, 1000)
    t.equal(bob.status, 401, 'another real client behind the balancer is not throttled for them')
    const rightful = await requestFrom(BOB, `${balancer.url}/api/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${id}:${secrets.BOOTSTRAP_CLIENT_SECRET}`).toString('base64')}`,
      },
      body: 'grant_type=client_credentials',
    })
    t.equal(rightful.status, 200, 'and the rightful client gets its token')
  })

  if (redisPrefix && backend.redisUrl) {
    t.test('with Redis, the counters live in Redis, keyed by the real addresses', async (t) => {
      const { Redis } = await import('ioredis')
      const redis = new Redis(backend.redisUrl as string)
      t.teardown(() => redis.quit())
      const keys = await redis.keys(`${redisPrefix}*`)
      t.ok(keys.length > 0, `counters under ${redisPrefix}: ${keys.length}`)
      const text = keys.join(' ')
      t.match(text, /127\.0\.0\.5/, 'keyed by the client the balancer saw')
      t.notMatch(text, /198\.51\.100\.|203\.0\.113\./, 'never by an address a client wrote')
    })
  }
})

t.test(
  'the trust list, hop by hop: the client is the rightmost hop not trusted; X-Forwarded-Host/-Proto only from trusted peers',
  async (t) => {
    const { buildApp } = await import('../../app.js')
    const { createConfig } = await import('../../config.js')
    const cases: [string, string[] | false, string, string | string[] | undefined, string][] = [
      ['off: the TCP peer, whatever it writes', false, '10.0.0.2', '198.51.100.1', '10.0.0.2'],
      ['a trusted balancer: the hop it appended', ['10.0.0.2'], '10.0.0.2', '198.51.100.1, 203.0.113.9', '203.0.113.9'],
      ['an untrusted peer: its own address', ['10.0.0.2'], '10.0.0.3', '198.51.100.1, 203.0.113.9', '10.0.0.3'],
      ['a CIDR range of balancers', ['10.0.0.0/8'], '10.1.2.3', '198.51.100.1, 203.0.113.9', '203.0.113.9'],
      [
        'two tiers (a CDN in front of the balancer), both listed',
        ['10.0.0.0/8', '192.0.2.0/24'],
        '10.1.2.3',
        '198.51.100.1, 203.0.113.9, 192.0.2.7',
        '203.0.113.9',
      ],
      ['X-Forwarded-For split over two header lines', ['10.0.0.2'], '10.0.0.2', ['198.51.100.1', '203.0.113.9'], '203.0.113.9'],
      ['IPv6 balancers', ['fd00::/8'], 'fd00::2', '198.51.100.1, 2001:db8::7', '2001:db8::7'],
      ["proxy-addr's named ranges", ['uniquelocal'], '192.168.1.5', '198.51.100.1, 203.0.113.9', '203.0.113.9'],
    ]
    for (const [label, trustProxy, peer, forwardedFor, expected] of cases) {
      const app = await buildApp(createConfig({ dataDir: testdir(t, {}), logLevel: 'silent', trustProxy }))
      t.teardown(() => app.close())
      app.get('/__seen', { config: { rateLimit: false } }, async (request) => ({
        ip: request.ip,
        host: request.host,
        protocol: request.protocol,
      }))
      await app.ready()
      const headers: Record<string, string | string[]> = {
        host: 'api.studio.test',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'https',
      }
      if (forwardedFor !== undefined) headers['x-forwarded-for'] = forwardedFor
      const seen = (await app.inject({ url: '/__seen', remoteAddress: peer, headers })).json() as {
        ip: string
        host: string
        protocol: string
      }
      t.equal(seen.ip, expected, `${label}: ${expected}`)
      const trusted = expected !== peer
      t.equal(
        seen.host,
        trusted ? 'evil.example' : 'api.studio.test',
        `${label}: X-Forwarded-Host ${trusted ? 'from the balancer' : 'ignored'}`,
      )
      t.equal(seen.protocol, trusted ? 'https' : 'http', `${label}: X-Forwarded-Proto ${trusted ? 'from the balancer' : 'ignored'}`)
      await app.close()
    }
  },
)
