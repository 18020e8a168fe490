// submitLead and getLeads: success, the bad-lead battery (each case stores nothing),
// idempotent replay, anonymous mode, paging with Link and the streamed log.
import t from 'tap'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'

const SUBMIT = '/scripts/enquiry_backend.php'
/** What the website form sends: the lead and the person's consent (its box ticked). */
const formLead = (n: number) => ({ ...leadOf(n), consent: true })

t.test('a lead is stored durably, answered with a receipt, and appears in the log', async (t) => {
  const { app } = await testApp(t)
  const { token, clientId } = await tokenFor(app, ['write:leads', 'read:leads'])
  const res = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { authorization: `Bearer ${token}` },
    payload: { name: '  Ada Lovelace ', email: 'ada@example.com', phone: '+44 20 7946 0958' },
  })
  t.equal(res.statusCode, 200)
  const receipt = res.json()
  t.equal(receipt.status, 'received')
  t.match(receipt.received_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const log = await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${token}` } })
  t.equal(log.statusCode, 200)
  t.equal(log.headers['cache-control'], 'no-store')
  t.same(log.json(), [
    {
      id: receipt.id,
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      phone: '+44 20 7946 0958',
      received_at: receipt.received_at,
      client_id: clientId,
      source: 'api',
    },
  ])
})

t.test('lead ids are UUIDv7s, in the order the leads were received (the id index grows at its end)', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const ids: string[] = []
  for (let i = 0; i < 5; i++) {
    const res = await call(t, app, { method: 'POST', url: SUBMIT, headers: { authorization: `Bearer ${token}` }, payload: leadOf(i) })
    t.equal(res.statusCode, 200)
    ids.push(res.json().id)
  }
  t.same([...ids].sort(), ids, 'each id sorts after the one received before it')
  // Leads submitted together share a commit: all after the ones before, none alike.
  const together = await Promise.all(
    [5, 6, 7].map((i) => app.inject({ method: 'POST', url: SUBMIT, headers: { authorization: `Bearer ${token}` }, payload: leadOf(i) })),
  )
  const last = ids.at(-1) ?? ''
  for (const r of together) {
    t.equal(r.statusCode, 200)
    t.ok(r.json().id > last, 'after every lead received before')
    ids.push(r.json().id)
  }
  t.equal(new Set(ids).size, ids.length, 'no two alike')
  for (const id of ids) t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `${id} is a UUIDv7`)
  const ms = Number.parseInt(ids[0]?.replaceAll('-', '').slice(0, 12) ?? '', 16)
  t.ok(Math.abs(ms - Date.now()) < 60_000, 'the first 48 bits are the time it was received, in ms')
})

t.test('a lead may carry a note (LeadFields.note): stored trimmed, shown in the log; a blank one is not stored', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const note = `${'n'.repeat(1988)} — Lisbon`
  for (const payload of [
    { ...leadOf(1), note: `  ${note}\n` },
    { ...leadOf(2), note: '   ' },
  ]) {
    t.equal((await call(t, app, { method: 'POST', url: SUBMIT, headers: auth, payload })).statusCode, 200)
  }
  const log = (await call(t, app, { url: '/leads.json', headers: auth })).json() as Record<string, unknown>[]
  t.equal(log[0]?.note, note, 'the note, trimmed (2000 characters as sent, the limit)')
  t.notOk('note' in (log[1] ?? {}), 'a blank note is not stored')
})

t.test('the bad-lead battery: each is refused with a useful hint and stores nothing', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const json = { ...auth, 'content-type': 'application/json' }
  const good = leadOf(1)
  const cases: { name: string; headers?: Record<string, string>; payload?: string; status: number; code: string; hint: RegExp }[] = [
    {
      name: 'missing name',
      payload: JSON.stringify({ email: good.email, phone: good.phone }),
      status: 400,
      code: 'invalid_request',
      hint: /`name` is required/,
    },
    {
      name: 'missing email',
      payload: JSON.stringify({ name: good.name, phone: good.phone }),
      status: 400,
      code: 'invalid_request',
      hint: /`email` is required/,
    },
    {
      name: 'missing phone',
      payload: JSON.stringify({ name: good.name, email: good.email }),
      status: 400,
      code: 'invalid_request',
      hint: /`phone` is required/,
    },
    {
      name: 'name is a number',
      payload: JSON.stringify({ ...good, name: 42 }),
      status: 400,
      code: 'invalid_request',
      hint: /`name` must be a string/,
    },
    {
      name: 'email is an array',
      payload: JSON.stringify({ ...good, email: ['a@b.co'] }),
      status: 400,
      code: 'invalid_request',
      hint: /`email` must be a string/,
    },
    {
      name: 'phone is null',
      payload: JSON.stringify({ ...good, phone: null }),
      status: 400,
      code: 'invalid_request',
      hint: /`phone` must be a string/,
    },
    {
      name: 'blank name',
      payload: JSON.stringify({ ...good, name: '   ' }),
      status: 400,
      code: 'invalid_request',
      hint: /`name` must be 1–200 characters/,
    },
    { name: 'empty name', payload: JSON.stringify({ ...good, name: '' }), status: 400, code: 'invalid_request', hint: /`name`/ },
    {
      name: 'overlong name',
      payload: JSON.stringify({ ...good, name: 'A'.repeat(201) }),
      status: 400,
      code: 'invalid_request',
      hint: /`name` must be 1–200/,
    },
    {
      name: 'not an email',
      payload: JSON.stringify({ ...good, email: 'ada-at-example.com' }),
      status: 400,
      code: 'invalid_request',
      hint: /`email` must be an email address/,
    },
    {
      name: 'overlong email',
      payload: JSON.stringify({ ...good, email: `${'a'.repeat(250)}@example.com` }),
      status: 400,
      code: 'invalid_request',
      hint: /`email`/,
    },
    {
      name: 'phone with letters',
      payload: JSON.stringify({ ...good, phone: 'call me maybe' }),
      status: 400,
      code: 'invalid_request',
      hint: /`phone` must be at most 40 characters with at least 6 digits/,
    },
    {
      name: 'phone with 5 digits',
      payload: JSON.stringify({ ...good, phone: '12-34-5' }),
      status: 400,
      code: 'invalid_request',
      hint: /at least 6 digits/,
    },
    {
      name: 'overlong phone',
      payload: JSON.stringify({ ...good, phone: '1'.repeat(41) }),
      status: 400,
      code: 'invalid_request',
      hint: /`phone`/,
    },
    {
      name: 'unknown field',
      payload: JSON.stringify({ ...good, company: 'ACME' }),
      status: 400,
      code: 'invalid_request',
      hint: /remove `company`; accepted fields are `name`, `email`, `phone`, `note`/,
    },
    {
      name: 'overlong note',
      payload: JSON.stringify({ ...good, note: 'n'.repeat(2001) }),
      status: 400,
      code: 'invalid_request',
      hint: /`note` must be text of at most 2000 characters/,
    },
    {
      name: 'note not text',
      payload: JSON.stringify({ ...good, note: 42 }),
      status: 400,
      code: 'invalid_request',
      hint: /`note` must be a string/,
    },
    { name: 'malformed JSON', payload: '{"name": "Ada",', status: 400, code: 'invalid_request', hint: /syntax error/ },
    { name: 'array body', payload: JSON.stringify([good]), status: 400, code: 'invalid_request', hint: /JSON object/ },
    { name: 'null body', payload: 'null', status: 400, code: 'invalid_request', hint: /JSON object/ },
    { name: 'string body', payload: '"hello"', status: 400, code: 'invalid_request', hint: /JSON object/ },
    { name: 'empty body', payload: '', status: 400, code: 'invalid_request', hint: /body/ },
    { name: 'no body, no content type', headers: auth, status: 400, code: 'invalid_request', hint: /application\/json/ },
    {
      name: 'text/plain',
      headers: { ...auth, 'content-type': 'text/plain' },
      payload: JSON.stringify(good),
      status: 415,
      code: 'unsupported_media_type',
      hint: /application\/json/,
    },
    {
      name: 'form-encoded',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=Ada&email=a%40b.co&phone=123456',
      status: 415,
      code: 'unsupported_media_type',
      hint: /application\/json/,
    },
    {
      name: 'oversized body',
      payload: JSON.stringify({ ...good, name: 'A'.repeat(17 * 1024) }),
      status: 413,
      code: 'payload_too_large',
      hint: /16384 bytes/,
    },
  ]
  for (const c of cases) {
    const res = await call(t, app, {
      method: 'POST',
      url: SUBMIT,
      headers: c.headers ?? json,
      ...(c.payload === undefined ? {} : { payload: c.payload }),
    })
    t.equal(res.statusCode, c.status, `${c.name}: status`)
    t.equal(res.json().code, c.code, `${c.name}: code`)
    t.match(res.json().hint, c.hint, `${c.name}: hint says what to change`)
    t.equal(await app.leads.count(), 0, `${c.name}: nothing stored`)
  }
  // The same lead, well-formed, is accepted: the battery failed for the reasons it names.
  const ok = await call(t, app, { method: 'POST', url: SUBMIT, headers: json, payload: JSON.stringify(good) })
  t.equal(ok.statusCode, 200)
  t.equal(await app.leads.count(), 1)
})

t.test('submitLead needs write:leads by default', async (t) => {
  const { app } = await testApp(t)
  const none = await call(t, app, { method: 'POST', url: SUBMIT, payload: leadOf(1) })
  t.equal(none.statusCode, 401)
  t.equal(none.json().code, 'unauthorized')
  const { token } = await tokenFor(app, ['read:leads'])
  const wrong = await call(t, app, { method: 'POST', url: SUBMIT, headers: { authorization: `Bearer ${token}` }, payload: leadOf(1) })
  t.equal(wrong.statusCode, 403)
  t.equal(wrong.json().code, 'insufficient_scope')
  t.match(wrong.json().hint, /write:leads/)
  t.equal(await app.leads.count(), 0)
})

t.test('operator switch: anonymous leads are accepted, with a stricter per-address limit', async (t) => {
  const { app } = await testApp(t, { leadsAllowAnonymous: true })
  const first = await call(t, app, { method: 'POST', url: SUBMIT, payload: formLead(1) })
  t.equal(first.statusCode, 200)
  t.equal(first.headers['x-ratelimit-limit'], '10', 'anonymous budget is anonymous_max')
  // A bad token is still refused: presenting credentials never silently downgrades to anonymous.
  const bad = await call(t, app, { method: 'POST', url: SUBMIT, headers: { authorization: 'Bearer not.a.token' }, payload: formLead(2) })
  t.equal(bad.statusCode, 401)
  const { token } = await tokenFor(app, ['write:leads'])
  const authed = await call(t, app, { method: 'POST', url: SUBMIT, headers: { authorization: `Bearer ${token}` }, payload: leadOf(3) })
  t.equal(authed.statusCode, 200)
  t.equal(authed.headers['x-ratelimit-limit'], '60', 'an authenticated client keeps the normal budget')
  for (let i = 4; i <= 11; i++) await call(t, app, { method: 'POST', url: SUBMIT, payload: formLead(i) })
  const over = await call(t, app, { method: 'POST', url: SUBMIT, payload: formLead(12) })
  t.equal(over.statusCode, 429)
  t.equal(over.json().code, 'rate_limited')
  t.match(over.headers['retry-after'], /^\d+$/)
  const rows = await app.leads.page(0, 100)
  t.equal(rows.length, 10, '9 anonymous + 1 authenticated stored; the refused ones were not')
  t.equal(rows.filter((r) => r.entry.client_id === null).length, 9)
  const spec = (await app.inject({ url: '/openapi.json' })).json()
  t.same(spec.paths[SUBMIT].post.security, [{ OAuth2: ['write:leads'] }, {}], 'the served spec says auth is optional')
})

t.test('Idempotency-Key: a retry returns the first receipt, a different body is 409', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const headers = { authorization: `Bearer ${token}`, 'idempotency-key': 'order-7f3a' }
  const first = await call(t, app, { method: 'POST', url: SUBMIT, headers, payload: leadOf(1) })
  const again = await call(t, app, { method: 'POST', url: SUBMIT, headers, payload: leadOf(1) })
  t.equal(again.statusCode, 200)
  t.same(again.json(), first.json(), 'same receipt')
  t.equal(await app.leads.count(), 1, 'stored once')
  const other = await call(t, app, { method: 'POST', url: SUBMIT, headers, payload: leadOf(2) })
  t.equal(other.statusCode, 409)
  t.equal(other.json().code, 'idempotency_conflict')
  t.equal(await app.leads.count(), 1)

  // Concurrent retries of one key store one lead and all get its receipt.
  const racing = await Promise.all(
    Array.from({ length: 8 }, () =>
      app.inject({ method: 'POST', url: SUBMIT, headers: { ...headers, 'idempotency-key': 'race' }, payload: leadOf(3) }),
    ),
  )
  t.same(new Set(racing.map((r) => r.statusCode)), new Set([200]))
  t.equal(new Set(racing.map((r) => r.json().id)).size, 1)
  t.equal(await app.leads.count(), 2)

  // Keys belong to their client: another client may use the same key.
  const other2 = await tokenFor(app, ['write:leads'])
  const mine = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { authorization: `Bearer ${other2.token}`, 'idempotency-key': 'order-7f3a' },
    payload: leadOf(9),
  })
  t.equal(mine.statusCode, 200)
  t.not(mine.json().id, first.json().id)

  const badKey = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { ...headers, 'idempotency-key': 'has space' },
    payload: leadOf(1),
  })
  t.equal(badKey.statusCode, 400)
  t.match(badKey.json().hint, /idempotency-key/i)
})

t.test('concurrent leads are all stored once, in a shared commit', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      app.inject({ method: 'POST', url: SUBMIT, headers: { authorization: `Bearer ${token}` }, payload: leadOf(i) }),
    ),
  )
  t.same(new Set(results.map((r) => r.statusCode)), new Set([200]))
  const ids = new Set(results.map((r) => r.json().id))
  t.equal(ids.size, 50)
  const log = (await app.inject({ url: '/leads.json', headers: { authorization: `Bearer ${token}` } })).json() as { id: string }[]
  t.same(new Set(log.map((l) => l.id)), ids)
})

t.test('getLeads pages with limit/after and a Link header; the whole log streams', async (t) => {
  const { app, config } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const ids: string[] = []
  for (let i = 0; i < 7; i++) ids.push((await app.inject({ method: 'POST', url: SUBMIT, headers: auth, payload: leadOf(i) })).json().id)

  const seen: string[] = []
  let url: string | undefined = '/leads.json?limit=3'
  let pages = 0
  while (url) {
    const res = await call(t, app, { url, headers: auth })
    t.equal(res.statusCode, 200)
    seen.push(...(res.json() as { id: string }[]).map((l) => l.id))
    const link = res.headers.link as string | undefined
    url = link ? (/^<([^>]+)>; rel="next"$/.exec(link)?.[1] ?? '').replace(config.publicBaseUrl, '') : undefined
    pages++
  }
  t.equal(pages, 3)
  t.same(seen, ids, 'every lead once, oldest first')

  const after = await call(t, app, { url: `/leads.json?after=${ids[4]}`, headers: auth })
  t.same(
    (after.json() as { id: string }[]).map((l) => l.id),
    ids.slice(5),
    'after without limit streams the rest',
  )

  const unknown = await call(t, app, { url: '/leads.json?after=no-such-lead&limit=2', headers: auth })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json().hint, /after/)
  for (const bad of ['limit=0', 'limit=1001', 'limit=ten']) {
    const res = await call(t, app, { url: `/leads.json?${bad}`, headers: auth })
    t.equal(res.statusCode, 400, bad)
    t.match(res.json().hint, /limit/)
  }
})

t.test('getLeads needs read:leads', async (t) => {
  const { app } = await testApp(t)
  const none = await call(t, app, { url: '/leads.json' })
  t.equal(none.statusCode, 401)
  t.match(none.headers['www-authenticate'], /^Bearer realm="studio-api"/)
  const { token } = await tokenFor(app, ['write:leads', 'read:projects'])
  const res = await call(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 403)
  t.match(res.headers['www-authenticate'], /error="insufficient_scope", scope="read:leads"/)
  t.match(res.json().hint, /request the scope read:leads/)
})
