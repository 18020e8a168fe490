// The typed client package (client/): versioned with the spec, its generated sources fresh, and
// `npm pack` giving a tarball that a consumer project installs without the network (its one
// dependency, openapi-fetch, from this project's node_modules), type-checks against, and runs
// against a live server: a token (client credentials), the catalogue with its ETag and a 304, a lead
// with an Idempotency-Key (the retry returns the first receipt), and the log paged by `Link`.
import { execFile } from 'node:child_process'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { projectRoot } from '../../config.js'
import { clientSources, clientSrc } from '../../scripts/client-schema.js'
import { leadOf, newClient, spec, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { live } from '../helpers/mcp.js'

const run = promisify(execFile)
const clientDir = join(projectRoot, 'client')
const pkg = JSON.parse(readFileSync(join(clientDir, 'package.json'), 'utf8')) as {
  name: string
  version: string
  dependencies: Record<string, string>
}

t.test("the package's version is the spec's, and its generated sources are the spec's", async (t) => {
  t.equal(pkg.version, spec.version, 'client/package.json version = info.version')
  const { schema, version } = await clientSources()
  t.equal(readFileSync(join(clientSrc, 'schema.ts'), 'utf8'), schema, 'client/src/schema.ts is fresh (npm run generate)')
  t.equal(readFileSync(join(clientSrc, 'version.ts'), 'utf8'), version, 'client/src/version.ts is fresh')
  t.match(version, `API_VERSION = "${spec.version}"`)
  t.notMatch(schema, /ConsultationRequest|PricingModel/, 'generated from the served document: no x-internal schemas')
  t.same(Object.keys(pkg.dependencies), ['openapi-fetch'], 'its only dependency')
})

const consumerScript = `// A consumer of the packed client, type-checked and compiled by the test, then run with plain node.
import { API_VERSION, createStudioClient, nextPage, type LeadReceipt } from 'studio-api-client'

const [base = '', clientId = '', clientSecret = '', seen = ''] = process.argv.slice(2)
const api = createStudioClient({ baseUrl: base, clientId, clientSecret })

const token = await api.token()
const catalogue = await api.GET('/project_metadata.json')
const etag = catalogue.response.headers.get('etag') ?? ''
const again = await api.GET('/project_metadata.json', { params: { header: { 'If-None-Match': etag } } })

const lead = { name: 'Packed Client', email: 'packed@example.com', phone: '+44 20 7946 0001' }
const key = 'packed-client-' + seen
const first = await api.POST('/scripts/enquiry_backend.php', { params: { header: { 'Idempotency-Key': key } }, body: lead })
const retry = await api.POST('/scripts/enquiry_backend.php', { params: { header: { 'Idempotency-Key': key } }, body: lead })
const receipt: LeadReceipt | undefined = first.data

const pages: string[][] = []
for await (const page of api.leadPages(1)) pages.push(page.map((entry) => entry.name))
const firstPage = await api.GET('/leads.json', { params: { query: { limit: 1 } } })

console.log(JSON.stringify({
  version: API_VERSION,
  served: catalogue.response.headers.get('x-api-version'),
  tokenParts: token.split('.').length,
  projects: catalogue.data?.length,
  etag,
  notModified: again.response.status,
  receipt,
  retry: retry.data,
  pages,
  next: nextPage(firstPage.response.headers.get('link')),
}))
`

t.test('npm pack → installed offline into a consumer project → run against a live server', async (t) => {
  const dir = testdir(t, { consumer: {} })
  const consumer = join(dir, 'consumer')

  // The tarball, as a consumer gets it (prepack builds dist/ with tsc).
  const packed = await run('npm', ['pack', '--pack-destination', dir, '--json'], { cwd: clientDir })
  const [{ filename, files }] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }]
  t.equal(filename, `${pkg.name}-${pkg.version}.tgz`)
  t.ok(
    ['dist/index.js', 'dist/index.d.ts', 'dist/schema.d.ts', 'README.md', 'package.json'].every((f) => files.some((x) => x.path === f)),
    'the build and its types are in it',
    { files },
  )
  t.notOk(
    files.some((f) => f.path.startsWith('src/')),
    'sources stay out',
  )

  // Installed with no network: openapi-fetch from this project's node_modules.
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }))
  await run(
    'npm',
    [
      'install',
      '--offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      join(projectRoot, 'node_modules', 'openapi-fetch'),
      join(dir, filename),
    ],
    { cwd: consumer },
  )
  t.ok(existsSync(join(consumer, 'node_modules', pkg.name, 'dist', 'index.js')), 'installed from the tarball')

  writeFileSync(join(consumer, 'consumer.mts'), consumerScript)
  writeFileSync(
    join(consumer, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        skipLibCheck: true,
        lib: ['ES2022', 'DOM'],
        types: ['node'],
        typeRoots: [join(projectRoot, 'node_modules', '@types')],
      },
      files: ['consumer.mts'],
    }),
  )
  const tsc = await run(process.execPath, [join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', consumer]).then(
    () => ({ code: 0, out: '' }),
    (err: { code: number; stdout: string }) => ({ code: err.code, out: err.stdout }),
  )
  t.equal(tsc.code, 0, `the consumer type-checks against the package's types ${tsc.out}`)

  const { app, base } = await live(t)
  const client = await newClient(app, [...spec.scopes])
  const { token } = await tokenFor(app, ['write:leads'])
  const earlier = await app.inject({
    method: 'POST',
    url: '/scripts/enquiry_backend.php',
    headers: { authorization: `Bearer ${token}` },
    payload: leadOf(1),
  })
  t.equal(earlier.statusCode, 200, 'a lead before, so the log has two pages')

  const out = await run(
    process.execPath,
    [join(consumer, 'consumer.mjs'), base, client.client_id, client.client_secret, String(process.pid)],
    {
      cwd: consumer,
    },
  )
  const result = JSON.parse(out.stdout)
  t.equal(result.version, spec.version)
  t.equal(result.served, spec.version, "the server's X-API-Version is the package's")
  t.equal(result.tokenParts, 3, 'a JWT from the client credentials')
  t.equal(result.projects, app.catalogue.current()?.projects.length)
  t.match(result.etag, /^(W\/)?".+"$/)
  t.equal(result.notModified, 304, 'If-None-Match with the ETag: 304')
  t.match(result.receipt, { status: 'received' })
  t.same(result.retry, result.receipt, 'the retry with the same Idempotency-Key returns the first receipt')
  t.same(result.pages, [['Prospect 1'], ['Packed Client']], 'the log, one lead a page, followed by Link: rel="next"')
  t.same(result.next, { limit: 1, after: JSON.parse(earlier.body).id })
})
