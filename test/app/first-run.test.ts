// What a newcomer trips on first (issue 22): a browser at `/` lands on the reference, gets an icon
// and an HTML 404 (programs keep the Error body); the default enquiry contact says what to configure
// and the server warns; the leads log writes its keys alike whole and paged; /docs reads the very
// document /openapi.json serves; Swagger UI's large files go out compressed (and the API's JSON
// does not), and the reference keeps no credentials in the browser.
import { inflateSync } from 'node:zlib'
import t from 'tap'
import { createConfig } from '../../config.js'
import { hasContactDetails } from '../../features/catalogue/contact.js'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'
import { captureLog } from '../helpers/log.js'

/** What Chromium sends when it navigates to a page. */
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8'

t.test('a browser at `/` is sent to the reference; a program gets the 404 Error body', async (t) => {
  const { app } = await testApp(t)
  const browser = await app.inject({ url: '/', headers: { accept: BROWSER } })
  t.equal(browser.statusCode, 302)
  t.equal(browser.headers.location, '/docs')
  const program = await call(t, app, { url: '/' })
  t.equal(program.statusCode, 404)
  t.equal(program.json().code, 'not_found')
  const json = await call(t, app, { url: '/', headers: { accept: 'application/json' } })
  t.equal(json.json().code, 'not_found', 'Accept: application/json too')
})

t.test('/favicon.ico is an icon (a 32×32 PNG), not an Error', async (t) => {
  const { app } = await testApp(t)
  const res = await app.inject({
    url: '/favicon.ico',
    headers: { accept: 'image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8' },
  })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'image/png')
  const png = res.rawPayload
  t.same([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the PNG signature')
  t.equal(png.toString('latin1', 12, 16), 'IHDR')
  t.equal(png.readUInt32BE(16), 32, 'width')
  t.equal(png.readUInt32BE(20), 32, 'height')
  // The image data inflates to 32 rows of a filter byte and 32 RGBA pixels.
  const idat = png.indexOf('IDAT', 0, 'latin1')
  const length = png.readUInt32BE(idat - 4)
  t.equal(inflateSync(png.subarray(idat + 4, idat + 4 + length)).length, 32 * (1 + 32 * 4))
})

t.test('an unknown path: an HTML 404 page for a browser, the Error body for everything else', async (t) => {
  const { app } = await testApp(t)
  for (const url of ['/nothing-here', '/docs/static/nope.js', '/images/nope.svg', '/api/nope']) {
    const page = await app.inject({ url, headers: { accept: BROWSER } })
    t.equal(page.statusCode, 404, `${url}: 404`)
    t.match(page.headers['content-type'], /^text\/html/, `${url}: a page`)
    t.match(page.body, /There is nothing here/)
    t.match(page.body, /href="\/docs"/, 'a way to the reference')
    t.match(page.body, /href="\/projects"/, 'and to the projects')
    t.match(page.headers['content-security-policy'], /default-src 'none'/, 'its own CSP: no script')
    t.equal(page.headers['x-api-version'], '1.3.0', 'with the headers every response carries')
    t.match(page.headers['x-ratelimit-limit'], /^\d+$/)

    const data = await call(t, app, { url })
    t.equal(data.statusCode, 404)
    t.equal(data.json().code, 'not_found', `${url}: the Error body without Accept`)
  }
  const escaped = await app.inject({ url: '/%3Cscript%3Ealert(1)%3C/script%3E', headers: { accept: BROWSER } })
  t.notMatch(escaped.body, /<script>alert/, 'the path is escaped')
  // A known path with another method is still a 405 Error (a 404 page only for what is not there).
  const wrongMethod = await app.inject({ method: 'DELETE', url: '/project_metadata.json', headers: { accept: BROWSER } })
  t.equal(wrongMethod.statusCode, 405)
  t.equal(wrongMethod.json().code, 'method_not_allowed')
})

t.test('ENQUIRY_CONTACT: the default says what to configure, and the server warns until it gives a way to write', async (t) => {
  t.match(createConfig({}).enquiryContact, /ENQUIRY_CONTACT/, 'the default names the variable')
  for (const real of [
    'Write to hello@studio.example',
    'Call +44 20 7946 0958',
    'Visit https://studio.example/contact',
    '12 Rua das Flores, Lisbon',
  ]) {
    t.ok(hasContactDetails(real), `"${real}" gives a way to write`)
  }
  for (const vague of [
    createConfig({}).enquiryContact,
    'Write to the studio to arrange a consultation: we answer within two working days.',
  ]) {
    t.notOk(hasContactDetails(vague), `"${vague}" does not`)
  }

  const log = captureLog()
  const { app } = await testApp(t, {}, { logger: { level: 'warn', stream: log.stream } })
  const warning = log.lines().find((l) => l.variable === 'ENQUIRY_CONTACT')
  t.ok(warning, 'a warning at start')
  t.equal(warning?.level, 40, 'at level warn')
  const project = app.catalogue.current()?.projects[0]
  const page = await app.inject({ url: `/projects/${project?.id}`, headers: { accept: BROWSER } })
  t.match(page.body, /ENQUIRY_CONTACT/, 'the page shows what to configure')

  const configured = captureLog()
  await testApp(
    t,
    { enquiryContact: 'Write to hello@studio.example or call +44 20 7946 0958' },
    { logger: { level: 'warn', stream: configured.stream } },
  )
  t.notOk(
    configured.lines().some((l) => l.variable === 'ENQUIRY_CONTACT'),
    'no warning once it gives a way to write',
  )
  const anonymous = captureLog()
  await testApp(t, { leadsAllowAnonymous: true }, { logger: { level: 'warn', stream: anonymous.stream } })
  t.notOk(
    anonymous.lines().some((l) => l.variable === 'ENQUIRY_CONTACT'),
    'nor when the pages show the form instead',
  )
})

t.test('the leads log writes each entry alike, whole or paged', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  for (let i = 1; i <= 3; i++) {
    const lead = i === 2 ? { ...leadOf(i), note: 'A flat in Lisbon' } : leadOf(i)
    t.equal((await call(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: auth, payload: lead })).statusCode, 200)
  }
  const whole = await call(t, app, { url: '/leads.json', headers: auth })
  const paged = await call(t, app, { url: '/leads.json?limit=3', headers: auth })
  t.equal(paged.body, whole.body, 'the same bytes')
  const first = (await call(t, app, { url: '/leads.json?limit=1', headers: auth })).json()[0]
  t.same(Object.keys(first), ['id', 'name', 'email', 'phone', 'received_at', 'client_id', 'source'], "the spec's example order: id first")
})

t.test('/docs reads the document /openapi.json serves: one document at both URLs', async (t) => {
  const { app } = await testApp(t)
  const served = await call(t, app, { url: '/openapi.json' })
  const docs = await app.inject({ url: '/docs/json' })
  t.same(docs.json(), served.json(), 'the same document')
  t.notOk(served.json().components.securitySchemes.ApiKey, 'without the scheme no operation lists (nothing accepts an API key)')
  t.ok(served.json().components.securitySchemes.ClientBasic, "with the token endpoint's client authentication")
})

t.test("Swagger UI's large files are served compressed; the API's JSON is not compressed per request", async (t) => {
  const { app } = await testApp(t)
  for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css', 'swagger-ui-standalone-preset.js']) {
    const url = `/docs/static/${file}`
    const plain = await app.inject({ url })
    t.equal(plain.statusCode, 200)
    t.notOk(plain.headers['content-encoding'], `${file}: as it is without Accept-Encoding`)
    for (const [accept, encoding] of [
      ['gzip, deflate, br, zstd', 'br'],
      ['gzip', 'gzip'],
    ] as const) {
      const res = await app.inject({ url, headers: { 'accept-encoding': accept } })
      t.equal(res.statusCode, 200)
      t.equal(res.headers['content-encoding'], encoding, `${file}: ${encoding} for "${accept}"`)
      t.match(res.headers.vary, /accept-encoding/i, 'Vary: Accept-Encoding')
      t.ok(
        res.rawPayload.length < plain.rawPayload.length / 3,
        `${file}: ${res.rawPayload.length} bytes instead of ${plain.rawPayload.length}`,
      )
    }
  }
  const { token } = await tokenFor(app, ['read:projects'])
  const projects = await call(t, app, {
    url: '/project_metadata.json',
    headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'gzip, deflate, br' },
  })
  t.equal(projects.statusCode, 200)
  t.notOk(projects.headers['content-encoding'], 'getProjects: no compression on the hot path')
})

t.test('the reference keeps no credentials in the browser: persistAuthorization is off', async (t) => {
  const { app } = await testApp(t)
  const init = await app.inject({ url: '/docs/static/swagger-initializer.js' })
  t.match(init.body, /"persistAuthorization":\s*false/)
})
