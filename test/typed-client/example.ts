// A consumer's typed client for the Studio API, as the README shows it: types generated from the
// server's own /openapi.json with openapi-typescript, calls made with openapi-fetch.
//
//   npx openapi-typescript https://api.studio.example/openapi.json -o studio-api.ts
//
// (test/system/typed-client.test.ts generates the types from a running server, type-checks this file
// against them and runs it.)
import createClient, { type Middleware } from 'openapi-fetch'
import type { paths } from './studio-api.js'

export async function walkthrough(baseUrl: string, clientId: string, clientSecret: string) {
  const api = createClient<paths>({ baseUrl })

  // 1. A token: client credentials as HTTP Basic, a form-encoded body.
  const token = await api.POST('/api/token', {
    headers: {
      authorization: `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`)}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: { grant_type: 'client_credentials' },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>),
  })
  if (!token.data) throw new Error(`token: ${token.error?.code}: ${token.error?.hint ?? token.error?.message}`)
  const bearer: Middleware = {
    onRequest({ request }) {
      request.headers.set('authorization', `Bearer ${token.data.access_token}`)
      return request
    },
  }
  api.use(bearer)

  // 2. Discovery documents.
  const metadata = await api.GET('/.well-known/oauth-authorization-server')
  const jwks = await api.GET('/.well-known/jwks.json')

  // 3. The catalogue, then the same again with its ETag (304: nothing changed).
  const projects = await api.GET('/project_metadata.json')
  const etag = projects.response.headers.get('etag') ?? ''
  const again = await api.GET('/project_metadata.json', { params: { header: { 'If-None-Match': etag } } })

  // 4. A lead (the Idempotency-Key makes a retry safe), and the log.
  const lead = await api.POST('/scripts/enquiry_backend.php', {
    params: { header: { 'Idempotency-Key': `typed-client-${Date.now()}` } },
    body: { name: 'Ada Lovelace', email: 'ada@example.com', phone: '+44 20 7946 0958' },
  })
  const log = await api.GET('/leads.json', { params: { query: { limit: 10 } } })

  return {
    scope: token.data.scope,
    issuer: metadata.data?.issuer,
    keys: jwks.data?.keys.length,
    projects: projects.data?.map((p) => p.title),
    notModified: again.response.status,
    receipt: lead.data,
    log: log.data,
  }
}
