// The catalogue's public pages: the index, a project page that leads somewhere (the other projects
// of its styles, a way to enquire), and a 404 a browser can read.
import t from 'tap'
import { type Project, readCatalogueFile } from '../../features/catalogue/index.js'
import { call, spec, testApp } from '../helpers/app.js'

const browser = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
const links = (html: string): string[] => [...html.matchAll(/href="(\/projects\/[a-z0-9-]+)"/g)].map((m) => m[1] as string)

t.test('/projects: every published project, newest first, filterable by style', async (t) => {
  const { app } = await testApp(t)
  const projects = readCatalogueFile(spec)
  const res = await call(t, app, { url: '/projects', headers: browser })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/html/)
  t.same(new Set(links(res.body)), new Set(projects.map((p) => `/projects/${p.id}`)), 'a link to every project')
  const years = [...res.body.matchAll(/ · (\d{4})<\/span>/g)].map((m) => Number(m[1]))
  t.same(
    years,
    [...years].sort((a, b) => b - a),
    'newest first',
  )

  const style = 'Japandi'
  const filtered = await call(t, app, { url: `/projects?style=${encodeURIComponent(style.toLowerCase())}`, headers: browser })
  const expected = projects.filter((p) => p.styles.includes(style)).map((p) => `/projects/${p.id}`)
  t.ok(expected.length > 0)
  t.same(new Set(links(filtered.body)), new Set(expected), 'only that style')
  t.match(filtered.body, `<h1>${style.toLowerCase()} projects</h1>`)
})

t.test('a project page links to the others of its styles, and says how to enquire', async (t) => {
  const contact = 'Call Marta on +44 20 7946 0000 to arrange a visit.'
  const { app } = await testApp(t, { enquiryContact: contact })
  const projects = app.catalogue.current()?.projects as Project[]
  const project = projects.find((p) => p.styles.length > 1) as Project
  const res = await call(t, app, { url: `/projects/${project.id}`, headers: browser })
  t.equal(res.statusCode, 200)
  const linked = new Set(links(res.body))
  for (const other of projects.filter((p) => p.id !== project.id && p.styles.some((s) => project.styles.includes(s))).slice(0, 3)) {
    t.ok(linked.has(`/projects/${other.id}`), `links to ${other.id}, which shares a style`)
  }
  for (const style of project.styles)
    t.match(res.body, `href="/projects?style=${encodeURIComponent(style).replaceAll('&', '&amp;')}"`, `links to all ${style}`)
  t.match(res.body, contact, 'anonymous leads off: the contact text from configuration')
  t.notMatch(res.body, /<form/, 'and no form')
  t.match(res.headers['content-security-policy'], /script-src 'none'/)
  t.equal((await call(t, app, { url: '/projects/enquiry.js' })).statusCode, 404, 'no form script either')
})

t.test('with anonymous leads on, the page offers the website form', async (t) => {
  const { app } = await testApp(t, { leadsAllowAnonymous: true })
  const project = app.catalogue.current()?.projects[0] as Project
  const res = await call(t, app, { url: `/projects/${project.id}`, headers: browser })
  t.match(res.body, /<form id="enquiry"/)
  t.match(res.body, /name="consent" type="checkbox" required/, 'with a consent box')
  t.match(res.body, '<script src="/projects/enquiry.js" defer></script>')
  t.match(res.headers['content-security-policy'], /script-src 'self'; connect-src 'self'/)
  const script = await call(t, app, { url: '/projects/enquiry.js' })
  t.equal(script.statusCode, 200)
  t.match(script.headers['content-type'], /^text\/javascript/)
  t.match(script.body, /\/scripts\/enquiry_backend\.php/)
})

t.test('an unknown project: an HTML 404 page for a browser, the Error body for everything else', async (t) => {
  const { app } = await testApp(t)
  // A page, by content negotiation: the one error that is not the Error body, asked for by a browser.
  const page = await app.inject({ url: '/projects/no-such-project', headers: browser })
  t.equal(page.statusCode, 404)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.body, /This project is not published/)
  t.match(page.body, 'href="/projects"', 'a way back to the index')
  const data = await call(t, app, { url: '/projects/no-such-project', headers: { accept: 'application/json' } })
  t.equal(data.statusCode, 404)
  t.equal(data.json().code, 'not_found')
  const hostile = await app.inject({ url: `/projects/${encodeURIComponent('<script>alert(1)</script>')}`, headers: browser })
  t.equal(hostile.statusCode, 404)
  t.notMatch(hostile.body, '<script>alert')
})

t.test("one 404 page for every unknown path: the site's header and footer, the studio's name; JSON clients get the Error", async (t) => {
  const { app } = await testApp(t)
  const { name, tagline } = app.playbook.studio
  t.not(name, spec.title, "the studio's name (data/playbook.json) is not the API's")
  /** The page's header and footer, as the project pages write them. */
  const frame = (html: string) => ({
    header: /<header>[\s\S]*?<\/header>/.exec(html)?.[0],
    footer: /<footer>[\s\S]*?<\/footer>/.exec(html)?.[0],
  })
  const projectPage = await app.inject({ url: `/projects/${app.catalogue.current()?.projects[0]?.id}`, headers: browser })
  const expected = frame(projectPage.body)
  t.match(expected.header, name, "a project page's header names the studio")
  t.match(expected.footer, tagline, 'its footer carries the tagline')
  t.match(expected.footer, 'href="/docs"', 'and a way to the API reference')

  for (const url of ['/nope', '/projects/no-such-project', '/nope/deeper?x=1']) {
    const page = await app.inject({ url, headers: browser })
    t.equal(page.statusCode, 404, `${url}: 404`)
    t.match(page.headers['content-type'], /^text\/html/)
    t.same(frame(page.body), expected, `${url}: the same header and footer as a project page`)
    t.match(page.body, `<title>`)
    t.match(page.body, new RegExp(`<title>[^<]* · ${name}</title>`), `${url}: the title names the studio`)
    t.match(page.body, '404 · not found')
    t.match(page.body, 'href="/projects"')

    const data = await call(t, app, { url, headers: { accept: 'application/json' } })
    t.equal(data.statusCode, 404, `${url}: 404 for a JSON client`)
    t.match(data.headers['content-type'], /^application\/json/)
    t.equal(data.json().code, 'not_found', `${url}: the Error body`)
  }
  t.match((await app.inject({ url: '/nope', headers: browser })).body, /Nothing is published at <code>\/nope<\/code>/, 'the path, shown')
})
