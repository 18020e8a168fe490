// Deprecation on the wire, driven only by the spec: an app built on a variant whose operation,
// parameter or field is `deprecated: true` with `x-sunset` answers every response of that
// operation, errors included, with RFC 9745 `Deprecation`, RFC 8594 `Sunset` and a
// `Link: <…/changelog>; rel="deprecation"`; the served document says so and declares the headers
// (each response is checked against it); the shipped spec deprecates nothing, so no response does.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance, InjectOptions } from 'fastify'
import t, { type Test } from 'tap'
import { projectRoot } from '../../config.js'
import { Conformance } from '../../plugins/spec/conformance.js'
import { type OpenApiDocument, Spec } from '../../plugins/spec/document.js'
import { leadOf, spec as shipped, testApp, tokenFor } from '../helpers/app.js'

const BASE = 'https://api.studio.example'
const LINK = `<${BASE}/changelog>; rel="deprecation"; type="text/markdown"`
// biome-ignore lint/suspicious/noExplicitAny: the variant's document, edited by each case
type Doc = Record<string, any>

function variant(edit: (doc: Doc) => void): Spec {
  const doc = structuredClone(shipped.document) as unknown as Doc
  edit(doc)
  return new Spec(doc as OpenApiDocument)
}

/** Injects, and checks the answer against the document the variant app serves (deprecation headers declared there). */
async function served(t: Test, app: FastifyInstance, opts: InjectOptions) {
  const res = await app.inject(opts)
  const conformance = new Conformance(new Spec((await app.inject({ url: '/openapi.json' })).json()))
  for (const f of conformance.check({
    method: opts.method ?? 'GET',
    url: String(opts.url),
    status: res.statusCode,
    headers: res.headers,
    body: res.body,
  })) {
    t.ok(f.ok, f.what, f.detail === undefined ? {} : { detail: f.detail })
  }
  return res
}

t.test('a deprecated operation: every response carries the headers, its errors included', async (t) => {
  const spec = variant((d) => {
    Object.assign(d.paths['/leads.json'].get, { deprecated: true, 'x-sunset': '2027-06-30', 'x-deprecated-at': '2026-12-01' })
  })
  const { app } = await testApp(t, { publicBaseUrl: BASE, rateLimits: { getLeads: { max: 3 } } }, { spec })
  const { token } = await tokenFor(app, ['read:leads', 'write:leads', 'read:projects'])
  const bearer = { authorization: `Bearer ${token}` }
  for (const n of [1, 2]) {
    await app.inject({ method: 'POST', url: '/scripts/enquiry_backend.php', headers: bearer, payload: leadOf(n) })
  }

  const deprecated = (res: { headers: Record<string, unknown> }, label: string) => {
    t.equal(res.headers.deprecation, `@${Date.UTC(2026, 11, 1) / 1000}`, `${label}: Deprecation, RFC 9745's @seconds of x-deprecated-at`)
    t.equal(res.headers.sunset, 'Wed, 30 Jun 2027 00:00:00 GMT', `${label}: Sunset, RFC 8594's HTTP-date of x-sunset`)
    t.match(String(res.headers.link), LINK, `${label}: Link rel="deprecation" to the changelog`)
  }
  const page = await served(t, app, { url: '/leads.json?limit=1', headers: bearer })
  t.equal(page.statusCode, 200)
  deprecated(page, '200')
  t.match(String(page.headers.link), /^<[^>]+>; rel="next", </, 'the next page link stays, the deprecation link follows it')
  const whole = await served(t, app, { url: '/leads.json', headers: bearer })
  deprecated(whole, '200, streamed')
  t.equal(whole.headers.link, LINK)
  deprecated(await served(t, app, { url: '/leads.json' }), '401')
  const { token: other } = await tokenFor(app, ['read:projects'])
  deprecated(await served(t, app, { url: '/leads.json', headers: { authorization: `Bearer ${other}` } }), '403')
  deprecated(await served(t, app, { url: '/leads.json?limit=0', headers: bearer }), '400')
  const limited = await served(t, app, { url: '/leads.json', headers: bearer })
  t.equal(limited.statusCode, 429, "the client's budget of 3 spent")
  deprecated(limited, '429')

  const projects = await app.inject({ url: '/project_metadata.json', headers: bearer })
  t.equal(projects.statusCode, 200)
  t.notOk(projects.headers.deprecation, 'an operation the spec does not deprecate: no Deprecation')
  t.notOk(projects.headers.sunset)

  // The served document (what /docs renders): the operation marked, its sunset said, the headers declared.
  const doc = (await app.inject({ url: '/openapi.json' })).json()
  const op = doc.paths['/leads.json'].get
  t.equal(op.deprecated, true, 'Swagger UI shows the operation deprecated')
  t.match(op.description, /^\*\*Deprecated:\*\* the operation \(sunset 2027-06-30\)\. Every response carries `Deprecation`, `Sunset`/)
  for (const name of ['Deprecation', 'Sunset', 'Link']) t.ok(op.responses['401'].headers[name], `its 401 declares ${name}`)
  t.notOk(op.responses['408'].headers?.Deprecation, 'not what is answered before a request could be read')
  t.same(doc.paths['/project_metadata.json'].get.responses['401'], { $ref: '#/components/responses/Unauthorized' })
  t.notOk(doc.components.responses.Unauthorized.headers.Deprecation, 'the shared responses of other operations are left alone')
})

t.test('a deprecated parameter or field deprecates the responses of the operations that have it', async (t) => {
  const spec = variant((d) => {
    Object.assign(d.paths['/leads.json'].get.parameters[1], { deprecated: true, 'x-sunset': '2027-09-30' })
    Object.assign(d.components.schemas.LeadFields.properties.note, { deprecated: true, 'x-sunset': '2027-03-31' })
  })
  const started = Math.floor(Date.now() / 1000)
  const { app } = await testApp(t, { publicBaseUrl: BASE }, { spec })
  const { token } = await tokenFor(app, ['read:leads', 'write:leads', 'read:projects'])
  const bearer = { authorization: `Bearer ${token}` }

  const lead = await served(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: bearer, payload: leadOf(1) })
  t.equal(lead.statusCode, 200)
  t.equal(lead.headers.sunset, 'Wed, 31 Mar 2027 00:00:00 GMT', 'submitLead: the note field, sunset 2027-03-31')
  const since = Number(String(lead.headers.deprecation).slice(1))
  t.ok(since >= started - 1 && since <= Math.ceil(Date.now() / 1000), 'without x-deprecated-at: in effect since the server started with it')
  t.equal(lead.headers.link, LINK)
  const invalid = await served(t, app, { method: 'POST', url: '/scripts/enquiry_backend.php', headers: bearer, payload: { name: 'x' } })
  t.equal(invalid.statusCode, 400)
  t.equal(invalid.headers.sunset, 'Wed, 31 Mar 2027 00:00:00 GMT', 'its 400 too')

  const log = await served(t, app, { url: '/leads.json', headers: bearer })
  t.equal(log.headers.sunset, 'Wed, 31 Mar 2027 00:00:00 GMT', 'getLeads: the earliest sunset of what it deprecates (note before after)')
  t.notOk((await app.inject({ url: '/project_metadata.json', headers: bearer })).headers.deprecation, 'getProjects has neither')

  const doc = (await app.inject({ url: '/openapi.json' })).json()
  t.match(
    doc.paths['/leads.json'].get.description,
    /^\*\*Deprecated:\*\* parameter after \(sunset 2027-09-30\), field note \(sunset 2027-03-31\)\./,
  )
})

t.test('the shipped spec deprecates nothing; /changelog serves the changelog the links point to', async (t) => {
  const { app } = await testApp(t, { publicBaseUrl: BASE })
  const { token } = await tokenFor(app, ['read:leads'])
  const res = await app.inject({ url: '/leads.json', headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 200)
  t.notOk(res.headers.deprecation)
  const changelog = await app.inject({ url: '/changelog' })
  t.equal(changelog.statusCode, 200)
  t.equal(changelog.headers['content-type'], 'text/markdown; charset=utf-8')
  t.equal(changelog.body, readFileSync(join(projectRoot, 'CHANGELOG.md'), 'utf8'))
})

t.test('a sunset that is not a date stops the start, naming the operation', async (t) => {
  const spec = variant((d) => {
    Object.assign(d.paths['/leads.json'].get, { deprecated: true, 'x-sunset': 'next summer' })
  })
  await t.rejects(
    testApp(t, { publicBaseUrl: BASE }, { spec }),
    /x-sunset of getLeads \(the operation\) must be a date such as 2027-06-30, not "next summer"/,
  )
})
