// getProjects: the catalogue with ETag / If-None-Match, 404 when unpublished, a version
// published while the app runs, absolute image URLs, and the shipped data against the contract.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { catalogueFile, type Project, readCatalogueFile } from '../../features/catalogue/index.js'
import { call, spec, testApp, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'

const URL_ = '/project_metadata.json'

async function reader(t: Parameters<typeof testApp>[0], overrides = {}) {
  const { app, config } = await testApp(t, overrides)
  const { token } = await tokenFor(app, ['read:projects'])
  return { app, config, auth: { authorization: `Bearer ${token}` } }
}

t.test('200: the catalogue, with an ETag and private caching', async (t) => {
  const { app, auth } = await reader(t)
  const res = await call(t, app, { url: URL_, headers: auth })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  t.equal(res.headers['cache-control'], 'private, max-age=60')
  t.match(res.headers.etag, /^"[^"]+"$/, 'a strong, quoted ETag')
  const projects = res.json() as Project[]
  t.ok(Array.isArray(projects))
  t.equal(projects.length, readCatalogueFile(spec).length, 'every shipped project is served')
  t.same(
    projects.map((p) => p.id),
    readCatalogueFile(spec).map((p) => p.id),
    'in catalogue order',
  )
})

t.test('If-None-Match: a matching tag is 304 with no body, in every form', async (t) => {
  const { app, auth } = await reader(t)
  const first = await call(t, app, { url: URL_, headers: auth })
  const etag = first.headers.etag as string
  t.ok(etag)
  const forms: [string, string][] = [
    ['the tag as sent', etag],
    ['the weak form', `W/${etag}`],
    ['in a list', `"something-else", ${etag}, "another"`],
    ['weak, in a list', `"x", W/${etag}`],
    ['a wildcard', '*'],
  ]
  for (const [name, value] of forms) {
    const res = await call(t, app, { url: URL_, headers: { ...auth, 'if-none-match': value } })
    t.equal(res.statusCode, 304, `${name}: 304`)
    t.equal(res.body, '', `${name}: no body`)
    t.equal(res.headers.etag, etag, `${name}: ETag repeated`)
  }
  for (const stale of ['"stale-tag"', 'W/"stale-tag"', `"${etag.slice(1, -2)}"`]) {
    const res = await call(t, app, { url: URL_, headers: { ...auth, 'if-none-match': stale } })
    t.equal(res.statusCode, 200, `${stale}: stale tag gets the catalogue`)
    t.equal(res.body, first.body)
  }
})

t.test('If-None-Match still needs a token: no 304 to an anonymous caller', async (t) => {
  const { app, auth } = await reader(t)
  const etag = (await app.inject({ url: URL_, headers: auth })).headers.etag as string
  const res = await call(t, app, { url: URL_, headers: { 'if-none-match': etag } })
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'unauthorized')
})

t.test('getProjects needs read:projects', async (t) => {
  const { app } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const res = await call(t, app, { url: URL_, headers: { authorization: `Bearer ${token}` } })
  t.equal(res.statusCode, 403)
  t.equal(res.json().code, 'insufficient_scope')
  t.match(res.json().hint, /read:projects/)
})

t.test('HEAD: headers of the 200, no body', async (t) => {
  const { app, auth } = await reader(t)
  const get = await app.inject({ url: URL_, headers: auth })
  const head = await call(t, app, { method: 'HEAD', url: URL_, headers: auth })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  t.equal(head.headers.etag, get.headers.etag)
  t.equal(head.headers['cache-control'], 'private, max-age=60')
  t.match(head.headers['content-type'], /^application\/json/)
  const notModified = await call(t, app, { method: 'HEAD', url: URL_, headers: { ...auth, 'if-none-match': get.headers.etag as string } })
  t.equal(notModified.statusCode, 304)
})

t.test('404 not_found with a hint when no catalogue is published', async (t) => {
  const { app, auth } = await reader(t, { seedCatalogue: false })
  t.equal(await app.catalogue.publishedEtag(), undefined, 'nothing was imported')
  const res = await call(t, app, { url: URL_, headers: auth })
  t.equal(res.statusCode, 404)
  t.equal(res.json().code, 'not_found')
  t.match(res.json().message, /catalogue/)
  t.match(res.json().hint, /catalogue/)
  t.notOk(res.headers.etag, 'no ETag on a 404')
  const star = await call(t, app, { url: URL_, headers: { ...auth, 'if-none-match': '*' } })
  t.equal(star.statusCode, 404, '* matches no representation when there is none')
})

t.test('a catalogue published while the app runs is served, with a new ETag', async (t) => {
  const { app, auth } = await reader(t)
  const before = await call(t, app, { url: URL_, headers: auth })
  const oldTag = before.headers.etag as string
  const smaller = readCatalogueFile(spec).slice(0, 5)
  const newTag = await app.catalogue.publish(smaller)
  t.ok(newTag)
  await app.catalogue.refresh()

  const after = await call(t, app, { url: URL_, headers: auth })
  t.equal(after.statusCode, 200)
  t.equal(after.headers.etag, `"${newTag}"`)
  t.not(after.headers.etag, oldTag)
  t.same(
    (after.json() as Project[]).map((p) => p.id),
    smaller.map((p) => p.id),
  )
  const old = await call(t, app, { url: URL_, headers: { ...auth, 'if-none-match': oldTag } })
  t.equal(old.statusCode, 200, 'the old tag is stale now')
  const cur = await call(t, app, { url: URL_, headers: { ...auth, 'if-none-match': after.headers.etag as string } })
  t.equal(cur.statusCode, 304)

  // Publishing the same content again gives the same tag: caches stay valid.
  t.equal(await app.catalogue.publish(smaller), newTag)

  // Unpublished: 404 after the refresh.
  await app.catalogue.publish([])
  await app.catalogue.refresh()
  const gone = await call(t, app, { url: URL_, headers: auth })
  t.equal(gone.statusCode, 404)
})

t.test('image URLs are absolute on the public base URL and serve the SVG', async (t) => {
  const publicBaseUrl = 'https://studio.example.test'
  const { app, auth } = await reader(t, { publicBaseUrl })
  const projects = (await call(t, app, { url: URL_, headers: auth })).json() as Project[]
  const urls = projects.flatMap((p) => p.images.map((i) => i.url))
  t.ok(urls.length >= projects.length, 'every project has an image')
  for (const url of urls) t.ok(url.startsWith(`${publicBaseUrl}/images/`), `${url} is on the public base URL`)
  for (const url of urls.slice(0, 3)) {
    const path = new URL(url).pathname
    const img = await call(t, app, { url: path })
    t.equal(img.statusCode, 200, `${path}: 200`)
    t.match(img.headers['content-type'], /^image\/svg\+xml/)
    t.match(img.body, /<svg[\s>]/)
  }
  const missing = await call(t, app, { url: '/images/no-such-image.svg' })
  t.equal(missing.statusCode, 404)
  t.equal(missing.json().code, 'not_found')
})

t.test('the shipped catalogue meets the contract', async (t) => {
  const projects = readCatalogueFile(spec)
  t.ok(projects.length >= 20, `at least 20 projects (${projects.length})`)
  const styles = new Set(projects.flatMap((p) => p.styles))
  t.ok(styles.size >= 6, `at least 6 styles (${styles.size})`)
  const cities = new Set(projects.map((p) => `${p.location.city}, ${p.location.country}`))
  t.ok(cities.size >= 8, `at least 8 cities (${cities.size})`)
  const countries = new Set(projects.map((p) => p.location.country))
  t.ok(countries.size >= 5, `at least 5 countries (${countries.size})`)
  t.equal(new Set(projects.map((p) => p.id)).size, projects.length, 'unique ids')

  const regions = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })
  for (const c of countries) {
    t.match(c, /^[A-Z]{2}$/, `${c}: two capital letters`)
    t.ok(regions.of(c), `${c}: an ISO 3166-1 alpha-2 code`)
  }
  const imageFiles = new Set(readFileSync(catalogueFile, 'utf8').match(/\/images\/[^"]+/g) ?? [])
  t.ok(imageFiles.size >= projects.length, 'the images are found')
  for (const p of projects) {
    t.match(p.id, /^[a-z0-9]+(-[a-z0-9]+)*$/, `${p.id}: a slug`)
    t.ok(p.title.trim() && p.designer.trim() && p.summary.trim(), `${p.id}: title, designer and summary`)
    t.ok(p.styles.length > 0 && p.tags.length > 0 && p.images.length > 0, `${p.id}: styles, tags, images`)
    t.ok(p.year >= 1900 && p.year <= new Date().getUTCFullYear() + 1, `${p.id}: a plausible year`)
    t.ok(p.area_sqm > 0, `${p.id}: a positive area`)
    for (const img of p.images) t.ok(img.alt.trim(), `${p.id}: image alt text`)
  }
  // Every referenced image is shipped.
  for (const path of imageFiles) {
    t.doesNotThrow(() => readFileSync(join(catalogueFile, '..', path)), `${path} is shipped`)
  }
})

t.test('readCatalogueFile rejects a broken file, naming the record', async (t) => {
  const good = readCatalogueFile(spec).slice(0, 3)
  const dir = testdir(t, {})
  const write = (name: string, data: unknown) => {
    const file = join(dir, name)
    writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data))
    return file
  }
  const [a, b, c] = good as [Project, Project, Project]

  const noTitle = write('no-title.json', [a, { ...b, title: undefined }, c])
  t.throws(() => readCatalogueFile(spec, noTitle), { message: new RegExp(`project #2 \\(${b.id}\\).*title`) })

  const badCountry = write('bad-country.json', [a, b, { ...c, location: { ...c.location, country: 'Portugal' } }])
  t.throws(() => readCatalogueFile(spec, badCountry), { message: new RegExp(`project #3 \\(${c.id}\\) /location/country`) })

  const wrongType = write('wrong-type.json', [{ ...a, year: '2024' }])
  t.throws(() => readCatalogueFile(spec, wrongType), { message: new RegExp(`project #1 \\(${a.id}\\) /year`) })

  const dup = write('dup.json', [a, b, a])
  t.throws(() => readCatalogueFile(spec, dup), { message: new RegExp(`duplicate project id ${a.id}`) })

  const notArray = write('object.json', { projects: good })
  t.throws(() => readCatalogueFile(spec, notArray), { message: /expected a JSON array/ })

  const notJson = write('broken.json', '[{"id": "x",')
  t.throws(() => readCatalogueFile(spec, notJson), SyntaxError)

  // The same records, intact, are accepted: the failures are the named defects.
  t.same(readCatalogueFile(spec, write('good.json', good)), good)
})
