// One-time enrolment links (features/staff/enrol.ts): opening a link uses nothing up; only a
// verified passkey registration does, once, atomically; unknown, used, expired and removed-person
// links get one answer. The passkey comes from a software authenticator (helpers/passkey.ts)
// checked by the server's real WebAuthn verification. SQLite, and PostgreSQL under DATABASE_URL.
import { randomBytes } from 'node:crypto'
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server'
import type { FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { ENROL_TTL_MS, StaffEnrolments } from '../../features/staff/enrolments.js'
import { testApp } from '../helpers/app.js'
import { captureLog } from '../helpers/log.js'
import { registrationResponse } from '../helpers/passkey.js'

const STAFF = 'noor@studio.test'

async function setup(t: Test) {
  const log = captureLog()
  const { app, config } = await testApp(t, { logLevel: 'info' }, { logger: { level: 'info', stream: log.stream } })
  const person = await app.staff.accounts.add(STAFF, 'Noor')
  const enrolments = new StaffEnrolments(app.store.db)
  return { app, base: config.publicBaseUrl, person, enrolments, log }
}

const passkeysOf = async (app: FastifyInstance, staffId: string) =>
  (await app.store.db.selectFrom('staff_passkeys').select('id').where('staff_id', '=', staffId).execute()).length

async function optionsOf(app: FastifyInstance, token: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const res = await app.inject({ url: `/oauth/enrol/${token}/passkey-options` })
  if (res.statusCode !== 200) throw new Error(`options: ${res.statusCode} ${res.body}`)
  return res.json()
}

const post = (app: FastifyInstance, token: string, response: unknown) =>
  app.inject({
    method: 'POST',
    url: `/oauth/enrol/${token}/passkey`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ response: JSON.stringify(response) }).toString(),
  })

t.test('opening a link uses nothing up; a verified passkey uses it, once', async (t) => {
  const { app, base, person, enrolments, log } = await setup(t)
  const { token } = await enrolments.issue(person.id)

  for (const method of ['GET', 'GET', 'HEAD'] as const) {
    const res = await app.inject({ method, url: `/oauth/enrol/${token}` })
    t.equal(res.statusCode, 200, `${method}: the page (a mail scanner's fetch uses nothing up)`)
    t.equal(res.headers['cache-control'], 'no-store')
    t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/)
    t.ok(res.headers['x-ratelimit-limit'], 'counted against a rate-limit budget')
    if (method === 'GET') {
      t.match(res.body, /noor@studio\.test/, 'it says whom it enrols')
      t.match(res.body, /Add a passkey on this device/)
      t.match(res.body, /<script src="\/oauth\/passkey\.js" defer><\/script>/)
      t.match(res.body, /<meta name="referrer" content="no-referrer">/, 'no Referer carries the token away')
    }
  }
  const options = await optionsOf(app, token)
  t.equal(options.user.name, STAFF)
  t.same(options, await optionsOf(app, token), 'the options again: the same challenge, nothing used up')

  const wrong = await post(app, token, { id: 'x', response: {} })
  t.equal(wrong.statusCode, 400, 'a response that does not verify is refused')
  t.match(wrong.body, /could not be added/)
  const otherChallenge = await post(app, token, registrationResponse({ ...options, challenge: 'c29tZXRoaW5nIGVsc2U' }, base))
  t.equal(otherChallenge.statusCode, 400, 'a registration of another ceremony is refused')
  t.equal((await app.inject({ url: `/oauth/enrol/${token}` })).statusCode, 200, 'and the link still works')
  t.equal(await passkeysOf(app, person.id), 0)

  const done = await post(app, token, registrationResponse(options, base))
  t.equal(done.statusCode, 200, done.body)
  t.match(done.body, /Passkey added/)
  t.match(done.body, `${base}/mcp?signin`, 'how to connect Claude: the URL to paste')
  t.match(done.body, `${base}/mcp</code>`, 'and ChatGPT')
  t.equal(await passkeysOf(app, person.id), 1, 'the passkey is the person’s')

  const again = await app.inject({ url: `/oauth/enrol/${token}` })
  t.equal(again.statusCode, 410, 'used: refused')
  t.match(again.body, /npm run staff -- enrol --email/)
  t.equal((await post(app, token, registrationResponse(options, base))).statusCode, 410, 'a second passkey through it: refused')
  t.equal(await passkeysOf(app, person.id), 1)
  const optionsAfter = await app.inject({ url: `/oauth/enrol/${token}/passkey-options` })
  t.equal(optionsAfter.statusCode, 400)
  t.match(optionsAfter.json(), { code: 'invalid_request', hint: /npm run staff -- enrol --email/ })

  const unknown = await app.inject({ url: `/oauth/enrol/${randomBytes(32).toString('base64url')}` })
  t.equal(unknown.statusCode, again.statusCode, 'unknown: the same status as used')
  t.equal(unknown.body, again.body, 'and the same page (no oracle)')
  const malformed = await app.inject({ url: '/oauth/enrol/not-a-token' })
  t.equal(malformed.body, again.body, 'a malformed token too')

  const lines = log.lines().filter((l) => String(l.event ?? '').startsWith('staff.'))
  const added = lines.find((l) => l.event === 'staff.passkey_added')
  t.match(added, { staff_id: person.id, method: 'enrol' }, 'logged with the staff id and the method')
  t.notMatch(JSON.stringify(lines), /noor@|Noor/, 'never the person’s address or name')
  t.notMatch(log.raw.join(''), token, 'nor the token')
})

t.test('the sign-in pages are in the site’s one shell: the project pages’ header and footer', async (t) => {
  const { app, person, enrolments } = await setup(t)
  const { token } = await enrolments.issue(person.id)
  const projects = await app.inject({ url: '/projects' })
  t.equal(projects.statusCode, 200)
  const part = (html: string, tag: string) => new RegExp(`<${tag}>[\\s\\S]*?</${tag}>`).exec(html)?.[0]
  for (const html of [(await app.inject({ url: `/oauth/enrol/${token}` })).body, (await app.inject({ url: '/oauth/enrol/x' })).body]) {
    t.ok(part(html, 'header'))
    t.equal(part(html, 'header'), part(projects.body, 'header'), 'the same header')
    t.equal(part(html, 'footer'), part(projects.body, 'footer'), 'the same footer')
  }
})

t.test('expired, voided by a newer link, and a removed person’s: refused', async (t) => {
  const { app, person, enrolments } = await setup(t)
  const expired = await enrolments.issue(person.id, Date.now() - ENROL_TTL_MS - 1000)
  const used = async (token: string) => (await app.inject({ url: `/oauth/enrol/${token}` })).statusCode
  t.equal(await used(expired.token), 410, 'older than 7 days')

  const first = await enrolments.issue(person.id)
  const second = await enrolments.issue(person.id)
  t.equal(await used(first.token), 410, 'a newer link voids the earlier unused one')
  t.equal(await used(second.token), 200)
  const weekLater = await enrolments.usable(second.token, Date.now() + ENROL_TTL_MS + 1000)
  t.equal(weekLater, undefined, 'and it ends after 7 days')

  t.ok(await app.staff.accounts.remove(person.id))
  t.equal(await used(second.token), 410, 'the person removed: their link stops working')
  const count = await app.store.db.selectFrom('staff_enrolments').select('id').where('staff_id', '=', person.id).execute()
  t.same(count, [], 'and is deleted with them')
})

t.test('two tabs: one registration uses the link, the other is refused', async (t) => {
  const { app, base, person, enrolments } = await setup(t)
  const { token } = await enrolments.issue(person.id)
  const options = await optionsOf(app, token)
  const results = await Promise.all([
    post(app, token, registrationResponse(options, base)),
    post(app, token, registrationResponse(options, base)),
  ])
  t.same(results.map((r) => r.statusCode).sort(), [200, 410])
  t.equal(await passkeysOf(app, person.id), 1, 'one passkey kept')
})
