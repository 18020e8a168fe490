// The spec as outside tools read it: Spectral with the OWASP API Security ruleset (.spectral.yaml,
// also run by `npm test`'s pretest) finds no error in spec/openapi.yaml, and its rules have teeth
// (a variant with an unbounded header, an unsecured token endpoint or a wrong example is
// refused). The token endpoint declares its HTTP Basic client authentication, and every response
// marks the headers the server always sends as required (test/helpers/app.ts's call() checks
// them on every response the suites see).
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { parse, stringify } from 'yaml'
import { projectRoot } from '../../config.js'
import { deref } from '../../plugins/spec/document.js'
import { basic, call, newClient, spec, testApp } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'

const run = promisify(execFile)
const SPECTRAL = join(projectRoot, 'node_modules', '.bin', 'spectral')
const RULESET = join(projectRoot, '.spectral.yaml')

interface Finding {
  code: string
  severity: number
  path: string[]
  message: string
}

/** Spectral's findings on a document, with the project's ruleset. */
async function spectral(file: string): Promise<Finding[]> {
  // Spectral exits 1 when it finds errors; its JSON is on stdout either way.
  const { stdout } = await run(SPECTRAL, ['lint', file, '--ruleset', RULESET, '--format', 'json', '--quiet'], {
    cwd: projectRoot,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err: { stdout?: string; stderr?: string }) => {
    if (!err.stdout) throw new Error(`spectral failed: ${err.stderr}`)
    return { stdout: err.stdout }
  })
  return JSON.parse(stdout) as Finding[]
}

const errorsOf = (findings: Finding[]) => findings.filter((f) => f.severity === 0)

// biome-ignore lint/suspicious/noExplicitAny: a parsed YAML document, edited by each case
type Doc = Record<string, any>

/** spec/openapi.yaml changed by `edit`, written to a file of the test's own. */
function variant(dir: string, edit: (doc: Doc) => void): string {
  const doc = parse(readFileSync(join(projectRoot, 'spec', 'openapi.yaml'), 'utf8'))
  edit(doc)
  const file = join(dir, 'openapi.yaml')
  writeFileSync(file, stringify(doc))
  return file
}

t.test('Spectral (oas + OWASP 2023) finds no error in the spec', async (t) => {
  const errors = errorsOf(await spectral('spec/openapi.yaml'))
  t.same(
    errors.map((e) => `${e.code} at ${e.path.join('.')}: ${e.message}`),
    [],
    'no errors',
  )
})

t.test('the ruleset has teeth: what issue 22 found is refused again', async (t) => {
  const cases: [string, (doc: Doc) => void, string, RegExp][] = [
    [
      'the token endpoint without security',
      (doc) => {
        doc.paths['/api/token'].post.security = []
      },
      'owasp:api2:2023-write-restricted',
      /api\/token/,
    ],
    [
      'a rate-limit header without bounds',
      (doc) => {
        doc.components.headers['X-RateLimit-Limit'].schema = { type: 'integer' }
      },
      'owasp:api4:2023-integer-limit',
      /X-RateLimit-Limit/,
    ],
    [
      'TokenRequest.scope without maxLength',
      (doc) => {
        delete doc.components.schemas.TokenRequest.properties.scope.maxLength
      },
      'owasp:api4:2023-string-limit',
      /TokenRequest\.properties\.scope/,
    ],
    [
      'a schema example its schema refuses (a name of spaces only)',
      (doc) => {
        doc.components.schemas.LeadFields.properties.name.examples = ['   ']
      },
      'schema-examples',
      /LeadFields\.properties\.name\.examples/,
    ],
    [
      'a request example its schema refuses',
      (doc) => {
        doc.paths['/scripts/enquiry_backend.php'].post.requestBody.content['application/json'].example = { name: 'Ada' }
      },
      'oas3-valid-media-example',
      /enquiry_backend/,
    ],
  ]
  for (const [label, edit, code, where] of cases) {
    const errors = errorsOf(await spectral(variant(testdir(t, {}), edit)))
    t.ok(
      errors.some((e) => e.code === code && where.test(e.path.join('.'))),
      `${label}: ${code}`,
      { found: errors.filter((e) => e.code === code).map((e) => e.path.join('.')) },
    )
  }
})

t.test('POST /api/token declares its HTTP Basic client authentication; client_secret_post is documented', async (t) => {
  const op = spec.operations.get('issueToken')
  t.same(op?.security, [{ ClientBasic: [] }], 'issueToken: security names ClientBasic')
  const scheme = spec.document.components.securitySchemes.ClientBasic as { type: string; scheme: string; description: string }
  t.equal(scheme.type, 'http')
  t.equal(scheme.scheme, 'basic')
  t.match(scheme.description, /client_secret_post/, 'the body alternative is documented on the scheme')
  t.match(op?.description, /client_secret_post/, 'and on the operation')

  const { app, config } = await testApp(t)
  const served = app.spec.served(config)
  t.same(served.paths['/api/token']?.post?.security, [{ ClientBasic: [] }], 'the served document says the same')
  const metadata = (await app.inject({ url: '/.well-known/oauth-authorization-server' })).json()
  t.same(metadata.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post'])

  // What is accepted did not change: both ways, never both at once.
  const client = await newClient(app, ['read:projects'])
  const form = 'application/x-www-form-urlencoded'
  const viaBasic = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': form },
    payload: 'grant_type=client_credentials',
  })
  t.equal(viaBasic.statusCode, 200, 'client_secret_basic')
  const viaBody = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { 'content-type': form },
    payload: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret,
    }).toString(),
  })
  t.equal(viaBody.statusCode, 200, 'client_secret_post')
  const neither = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { 'content-type': form },
    payload: 'grant_type=client_credentials',
  })
  t.equal(neither.statusCode, 401, 'neither: 401')
  t.equal(neither.json().error, 'invalid_client', 'an RFC 6749 invalid_client')
  t.equal(neither.headers['www-authenticate'], 'Basic realm="studio-api"')
})

t.test("TokenRequest's strings are bounded: an over-long value is an RFC 6749 invalid_request", async (t) => {
  const { app } = await testApp(t)
  const client = await newClient(app, ['read:projects'])
  const res = await call(t, app, {
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(client.client_id, client.client_secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: `grant_type=client_credentials&scope=${'read:projects+'.repeat(100)}read:projects`,
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().code, 'invalid_request')
  t.equal(res.json().error, 'invalid_request')
  t.match(res.json().hint, /scope/)
})

t.test('every response of every operation marks the headers the server always sends as required', async (t) => {
  // Written before a request could be read: no budget spent, so no rate-limit headers.
  const early = new Set(['408', '431'])
  for (const op of spec.operations.values()) {
    for (const [status, written] of Object.entries(op.responses as Record<string, unknown>)) {
      const response = deref(spec.document, written) as { headers?: Record<string, { required?: boolean }> }
      const headers = Object.fromEntries(
        Object.entries(response.headers ?? {}).map(([name, h]) => [
          name,
          (deref(spec.document, h) as { required?: boolean }).required === true,
        ]),
      )
      const where = `${op.operationId} ${status}`
      t.equal(headers['X-API-Version'], true, `${where}: X-API-Version required`)
      t.equal(headers['X-Request-Id'], true, `${where}: X-Request-Id required`)
      if (!early.has(status)) {
        for (const name of ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']) {
          t.equal(headers[name], true, `${where}: ${name} required`)
        }
      }
      if (status === '429') t.equal(headers['Retry-After'], true, `${where}: Retry-After required`)
    }
  }
})

t.test('every operation has a description', async (t) => {
  for (const op of spec.operations.values()) t.ok((op as { description?: string }).description?.trim(), `${op.operationId}`)
})
