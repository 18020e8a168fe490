// No personal data in the server log: a full flow against an app logging to a capture stream
// (without the server's redaction, so the app itself must not log anything sensitive), then
// every line is checked: one 'request' line per request, and no email, phone, name, secret,
// token or Authorization value anywhere.
import { join } from 'node:path'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { buildApp } from '../../app.js'
import { createConfig } from '../../config.js'
import { basic, newClient, storageConfig } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { captureLog } from '../helpers/log.js'

const SUBMIT = '/scripts/enquiry_backend.php'

t.test('the log holds one line per request and no personal data, secret or token', async (t) => {
  const { stream, raw } = captureLog()
  const config = createConfig({ dataDir: testdir(t, {}), logLevel: 'info', ...(await storageConfig(t)) })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  let closed = false
  t.teardown(async () => {
    if (!closed) await app.close()
  })
  app.get('/boom', async () => {
    throw new Error('the storage driver failed unexpectedly')
  })
  await app.ready()

  const sent: { res: LightMyRequestResponse; method: string; path: string }[] = []
  const req = async (opts: InjectOptions) => {
    const res = await app.inject(opts)
    sent.push({ res, method: opts.method ?? 'GET', path: String(opts.url).split('?')[0] as string })
    return res
  }

  // Credentials and tokens.
  const client = await newClient(app, ['read:projects', 'read:leads', 'write:leads'], 'Log test client')
  const basicHeader = basic(client.client_id, client.client_secret)
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  const tokenRes = await req({
    method: 'POST',
    url: '/api/token',
    headers: { ...form, authorization: basicHeader },
    payload: 'grant_type=client_credentials',
  })
  t.equal(tokenRes.statusCode, 200)
  const token = tokenRes.json().access_token as string
  const bearer = `Bearer ${token}`
  const postForm = await req({
    method: 'POST',
    url: '/api/token',
    headers: form,
    payload: `grant_type=client_credentials&client_id=${client.client_id}&client_secret=${client.client_secret}&scope=read%3Aprojects`,
  })
  t.equal(postForm.statusCode, 200)
  const token2 = postForm.json().access_token as string

  const wrongSecret = 'WrongSecret-9f8e7d6c5b4a39281706f5e4d3c2b1a0'
  const wrongBasic = basic(client.client_id, wrongSecret)
  const failed = await req({
    method: 'POST',
    url: '/api/token',
    headers: { ...form, authorization: wrongBasic },
    payload: 'grant_type=client_credentials',
  })
  t.equal(failed.statusCode, 401)
  const failedPost = await req({
    method: 'POST',
    url: '/api/token',
    headers: form,
    payload: `grant_type=client_credentials&client_id=${client.client_id}&client_secret=${wrongSecret}`,
  })
  t.equal(failedPost.statusCode, 401)

  // The catalogue.
  const projects = await req({ url: '/project_metadata.json', headers: { authorization: bearer } })
  t.equal(projects.statusCode, 200)
  const notModified = await req({
    url: '/project_metadata.json',
    headers: { authorization: `Bearer ${token2}`, 'if-none-match': projects.headers.etag as string },
  })
  t.equal(notModified.statusCode, 304)

  // Leads with distinctive personal data.
  const leads = [
    { name: 'Zephyrine Quillfeather', email: 'zephyrine.quillfeather@example.org', phone: '+41 44 555 01 23' },
    { name: 'Bartholomew Oyelaran-Sturt', email: 'b.oyelaran.sturt@example.net', phone: '(0)20 7946 8871' },
    { name: 'Ingrid Vasquez-Holmgren', email: 'ingrid+architecture@example.com', phone: '555.867.5309' },
  ]
  for (const [i, lead] of leads.entries()) {
    const res = await req({
      method: 'POST',
      url: SUBMIT,
      headers: { authorization: bearer, 'idempotency-key': `log-test-${i}` },
      payload: lead,
    })
    t.equal(res.statusCode, 200)
  }
  const bad = { name: 'Cordelia Fairweather-Nakamura', email: 'cordelia-at-nowhere', phone: '+33 1 42 68 53 00' }
  const badRes = await req({ method: 'POST', url: SUBMIT, headers: { authorization: bearer }, payload: bad })
  t.equal(badRes.statusCode, 400)
  const unknownField = { ...leads[0], company: 'Quillfeather Holdings' }
  t.equal((await req({ method: 'POST', url: SUBMIT, headers: { authorization: bearer }, payload: unknownField })).statusCode, 400)
  const badJson = '{"name":"Ottoline Brackenbury","email":"ottoline@example.org",'
  t.equal(
    (await req({ method: 'POST', url: SUBMIT, headers: { authorization: bearer, 'content-type': 'application/json' }, payload: badJson }))
      .statusCode,
    400,
  )

  // The leads log, whole and paged (the query names a lead id and an email: never logged).
  const log = await req({ url: '/leads.json', headers: { authorization: bearer } })
  t.equal(log.statusCode, 200)
  t.equal((log.json() as unknown[]).length, 3)
  const firstId = (log.json() as { id: string }[])[0]?.id as string
  t.equal((await req({ url: `/leads.json?limit=1&after=${firstId}`, headers: { authorization: bearer } })).statusCode, 200)
  t.equal(
    (await req({ url: `/leads.json?after=${encodeURIComponent(leads[1]?.email as string)}`, headers: { authorization: bearer } }))
      .statusCode,
    400,
  )
  t.equal((await req({ url: '/leads.json', headers: { authorization: 'Bearer forged.token.value' } })).statusCode, 401)

  // An unknown path, a wrong method and a crash.
  t.equal((await req({ url: `/contact?email=${encodeURIComponent(leads[2]?.email as string)}` })).statusCode, 404)
  t.equal((await req({ method: 'DELETE', url: '/leads.json', headers: { authorization: bearer } })).statusCode, 405)
  const boom = await req({ url: '/boom', headers: { authorization: bearer } })
  t.equal(boom.statusCode, 500)

  await app.close()
  closed = true

  const lines = raw.join('').split('\n').filter(Boolean)
  const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  t.ok(records.length > sent.length, 'the log was captured')

  // One 'request' line per request, with its id, status and path.
  const requestLines = records.filter((r) => r.msg === 'request')
  t.equal(requestLines.length, sent.length, 'exactly one request line per request')
  for (const { res, method, path } of sent) {
    const id = res.headers['x-request-id'] as string
    t.ok(id, `${method} ${path}: has a request id`)
    const mine = requestLines.filter((r) => r.reqId === id)
    t.equal(mine.length, 1, `${method} ${path} → ${res.statusCode}: one request line`)
    t.equal(mine[0]?.status, res.statusCode, `${method} ${path}: status logged`)
    t.equal(mine[0]?.path, path, `${method} ${path}: path logged without the query string`)
    t.equal(mine[0]?.method, method)
  }
  const crash = records.filter((r) => r.msg === 'request failed')
  t.equal(crash.length, 1, 'the crash is logged once')
  t.equal(crash[0]?.reqId, boom.headers['x-request-id'], 'with its request id')
  t.equal(requestLines.find((r) => r.reqId === tokenRes.headers['x-request-id'])?.operation, 'issueToken')
  t.equal(requestLines.find((r) => r.reqId === projects.headers['x-request-id'])?.client, client.client_id, 'the client id is logged')

  // Nothing sensitive anywhere.
  const all = lines.join('\n')
  const forbidden: [string, string][] = [
    ['client secret', client.client_secret],
    ['wrong secret', wrongSecret],
    ['access token', token],
    ['second access token', token2],
    ['token signature', token.split('.')[2] as string],
    ['Basic header value', basicHeader.slice('Basic '.length)],
    ['wrong Basic header value', wrongBasic.slice('Basic '.length)],
    ['Bearer header', 'Bearer '],
    ['forged token', 'forged.token.value'],
    ['bad JSON body', 'Ottoline'],
  ]
  for (const lead of [...leads, bad]) {
    forbidden.push(['lead name', lead.name], ['lead email', lead.email], ['lead phone', lead.phone])
    forbidden.push(['lead email, url-encoded', encodeURIComponent(lead.email)])
    forbidden.push(['lead phone digits', lead.phone.replace(/\D/g, '')])
  }
  forbidden.push(['unknown field value', 'Quillfeather Holdings'], ['email local part', 'zephyrine.quillfeather'])
  for (const [what, value] of forbidden) {
    t.notOk(all.includes(value), `no ${what} in the log (${value.slice(0, 12)}…)`)
  }
  t.notOk(
    records.some((r) => 'headers' in r || (r.req as { headers?: unknown } | undefined)?.headers),
    'no headers logged',
  )
  t.notOk(/"authorization"/i.test(all), 'no Authorization header logged')
  t.notOk(
    records.some((r) => 'body' in r || 'payload' in r),
    'no bodies logged',
  )
})

t.test("a request's own logger is made on first use and carries the request id; logging off works too", async (t) => {
  const { stream, lines } = captureLog()
  const dir = testdir(t, { loud: {}, quiet: {} })
  const config = createConfig({ dataDir: join(dir, 'loud'), logLevel: 'info', ...(await storageConfig(t)) })
  const app = await buildApp(config, { logger: { level: 'info', stream } })
  t.teardown(() => app.close())
  app.get('/lazy-log', async (request) => {
    request.log.debug({ dropped: true }, 'below the level: no child is made for it')
    request.log.warn({ lazy: true }, 'through the request logger')
    return { ok: true }
  })
  const res = await app.inject({ url: '/lazy-log' })
  t.equal(res.statusCode, 200)
  const warn = lines().find((l) => l.msg === 'through the request logger')
  t.ok(warn, 'the line was written')
  t.type(warn?.reqId, 'string', 'bound to the request')
  const request = lines().find((l) => l.msg === 'request' && l.path === '/lazy-log')
  t.equal(request?.reqId, warn?.reqId, "the request line carries the same id as the request's own lines")
  t.notOk(
    lines().some((l) => l.dropped),
    'a level below the logger is dropped',
  )

  const quiet = await buildApp(createConfig({ dataDir: join(dir, 'quiet'), ...(await storageConfig(t)) }), { logger: false })
  t.teardown(() => quiet.close())
  quiet.get('/lazy-log', async (request) => {
    request.log.info('nowhere')
    return { ok: true }
  })
  t.equal((await quiet.inject({ url: '/lazy-log' })).statusCode, 200, 'logging off: the request logger is a no-op')
})
