// Real OAuth clients over a real socket: oauth4webapi discovers the server (RFC 8414) and
// obtains a token with client_secret_basic; jose verifies it against the published JWKS; the
// token then reads the catalogue with fetch.
import { createRemoteJWKSet, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { newClient, spec, testApp, tokenFor } from '../helpers/app.js'
import { freePort } from '../helpers/processes.js'

async function listening(t: Parameters<typeof testApp>[0]) {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const { app, config } = await testApp(t, { port, publicBaseUrl: base })
  await app.listen({ port, host: '127.0.0.1' })
  return { app, config, base }
}

const insecure = { [oauth.allowInsecureRequests]: true }

t.test('oauth4webapi discovers the server and gets a token that jose verifies and the API accepts', async (t) => {
  const { app, config, base } = await listening(t)
  t.equal(config.publicBaseUrl, base)
  const creds = await newClient(app, ['read:projects', 'read:leads'], 'oauth4webapi client')

  const issuer = new URL(base)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
  t.equal(as.issuer, base, 'issuer is the public base URL')
  t.equal(as.token_endpoint, `${base}/api/token`)
  t.equal(as.jwks_uri, `${base}/.well-known/jwks.json`)
  // Machines use client_credentials with a secret; the studio's staff (features/staff) the code flow, as public clients.
  t.same(as.grant_types_supported, ['client_credentials', 'authorization_code', 'refresh_token'])
  t.same([...(as.token_endpoint_auth_methods_supported ?? [])].sort(), ['client_secret_basic', 'client_secret_post', 'none'])
  t.same([...(as.scopes_supported ?? [])].sort(), [...spec.scopes].sort())

  const client: oauth.Client = { client_id: creds.client_id }
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic(creds.client_secret),
    new URLSearchParams({ scope: 'read:projects' }),
    insecure,
  )
  t.equal(response.headers.get('cache-control'), 'no-store')
  const result = await oauth.processClientCredentialsResponse(as, client, response)
  t.equal(result.token_type, 'bearer', 'oauth4webapi normalises the token type')
  t.equal(result.expires_in, 3600)
  t.equal(result.scope, 'read:projects', 'the requested subset')

  // Verified the way a resource server would: the published JWKS, RFC 9068 checks.
  t.ok(as.jwks_uri)
  const jwks = createRemoteJWKSet(new URL(String(as.jwks_uri)))
  const { payload, protectedHeader } = await jwtVerify(result.access_token, jwks, {
    issuer: base,
    audience: base,
    typ: 'at+jwt',
    algorithms: ['EdDSA'],
  })
  t.equal(protectedHeader.alg, 'EdDSA')
  t.equal(protectedHeader.typ, 'at+jwt')
  t.type(protectedHeader.kid, 'string')
  t.equal(payload.sub, creds.client_id)
  t.equal(payload.client_id, creds.client_id)
  t.equal(payload.scope, 'read:projects')
  t.match(payload.jti, /^[0-9a-f-]{36}$/)
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 3600, 'a one-hour token')
  t.ok(Math.abs((payload.iat ?? 0) - Date.now() / 1000) < 300, 'issued now')

  // A verifier with another audience or issuer refuses it.
  await t.rejects(jwtVerify(result.access_token, jwks, { audience: 'https://other.example', algorithms: ['EdDSA'] }))
  await t.rejects(jwtVerify(result.access_token, jwks, { issuer: 'https://other.example', algorithms: ['EdDSA'] }))

  const projects = await fetch(`${base}/project_metadata.json`, { headers: { authorization: `Bearer ${result.access_token}` } })
  t.equal(projects.status, 200)
  t.equal(projects.headers.get('x-api-version'), spec.version)
  const list = (await projects.json()) as unknown[]
  t.ok(Array.isArray(list) && list.length >= 20, 'the catalogue')

  const noToken = await fetch(`${base}/project_metadata.json`)
  t.equal(noToken.status, 401)
  t.match(noToken.headers.get('www-authenticate') ?? '', /^Bearer realm="studio-api"/)
})

t.test('oauth4webapi with client_secret_post, and its error handling of a wrong secret', async (t) => {
  const { app, base } = await listening(t)
  const creds = await newClient(app, ['write:leads'])
  const issuer = new URL(base)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
  const client: oauth.Client = { client_id: creds.client_id }

  const ok = await oauth.processClientCredentialsResponse(
    as,
    client,
    await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost(creds.client_secret), new URLSearchParams(), insecure),
  )
  t.equal(ok.scope, 'write:leads', 'no scope asked: all the client may have')

  const bad = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic('wrong'), new URLSearchParams(), insecure)
  t.equal(bad.status, 401)
  t.equal(bad.headers.get('www-authenticate'), 'Basic realm="studio-api"')
  const err = await oauth.processClientCredentialsResponse(as, client, bad).then(
    () => undefined,
    (e: unknown) => e,
  )
  // A 401 with a challenge: oauth4webapi surfaces the challenge, and the body is RFC 6749 §5.2.
  t.ok(err instanceof oauth.WWWAuthenticateChallengeError, 'oauth4webapi reads the Basic challenge')
  if (err instanceof oauth.WWWAuthenticateChallengeError) {
    t.equal(err.status, 401)
    t.same(err.cause, [{ scheme: 'basic', parameters: { realm: 'studio-api' } }])
    const body = (await err.response.json()) as Record<string, unknown>
    t.equal(body.error, 'invalid_client')
    t.equal(body.code, 'invalid_client')
    t.type(body.error_description, 'string')
  }

  const badScope = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic(creds.client_secret),
    new URLSearchParams({ scope: 'read:leads' }),
    insecure,
  )
  const scopeErr = await oauth.processClientCredentialsResponse(as, client, badScope).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(scopeErr instanceof oauth.ResponseBodyError)
  if (scopeErr instanceof oauth.ResponseBodyError) t.equal(scopeErr.error, 'invalid_scope')
})

t.test('the JWKS and the metadata documents', async (t) => {
  const { base } = await listening(t)
  const jwksRes = await fetch(`${base}/.well-known/jwks.json`)
  t.equal(jwksRes.status, 200)
  t.match(jwksRes.headers.get('content-type') ?? '', /^application\/json/)
  const { keys } = (await jwksRes.json()) as { keys: Record<string, string>[] }
  t.equal(keys.length, 1)
  const key = keys[0] ?? {}
  t.equal(key.kty, 'OKP')
  t.equal(key.crv, 'Ed25519')
  t.equal(key.alg, 'EdDSA')
  t.equal(key.use, 'sig')
  t.type(key.kid, 'string')
  t.match(key.x, /^[A-Za-z0-9_-]{43}$/, 'a 32-byte public key')
  t.notOk('d' in key, 'no private part')

  const metaRes = await fetch(`${base}/.well-known/oauth-authorization-server`)
  t.equal(metaRes.status, 200)
  const meta = (await metaRes.json()) as Record<string, unknown>
  for (const field of [
    'issuer',
    'token_endpoint',
    'jwks_uri',
    'grant_types_supported',
    'token_endpoint_auth_methods_supported',
    'scopes_supported',
  ]) {
    t.ok(field in meta, `metadata has ${field}`)
  }
  t.equal(meta.issuer, base)
  t.equal(meta.token_endpoint, `${base}/api/token`)
  t.equal(meta.jwks_uri, `${base}/.well-known/jwks.json`)
})

t.test('a client that meets the API first finds where to get a token (RFC 9728), with oauth4webapi', async (t) => {
  const { app, base } = await listening(t)
  const creds = await newClient(app, ['read:projects'], 'RFC 9728 client')
  const projects = new URL(`${base}/project_metadata.json`)
  const wellKnown = `${base}/.well-known/oauth-protected-resource`

  // A token the API refuses (here: not a token at all), and none at all: each 401 names the
  // resource's metadata in its challenge.
  const challenges: Record<string, string | undefined> = {}
  const stale = await oauth.protectedResourceRequest('not-a-token', 'GET', projects, undefined, null, insecure).then(
    () => undefined,
    (e: unknown) => e,
  )
  t.ok(stale instanceof oauth.WWWAuthenticateChallengeError, 'oauth4webapi reads the Bearer challenge')
  if (stale instanceof oauth.WWWAuthenticateChallengeError) {
    t.equal(stale.status, 401)
    const [bearer] = stale.cause
    t.equal(bearer?.scheme, 'bearer')
    t.equal(bearer?.parameters.error, 'invalid_token')
    challenges.refused = bearer?.parameters.resource_metadata
  }
  const none = await fetch(projects)
  t.equal(none.status, 401)
  challenges.none = /resource_metadata="([^"]+)"/.exec(none.headers.get('www-authenticate') ?? '')?.[1]
  t.same(challenges, { refused: wellKnown, none: wellKnown }, 'both challenges name the metadata document')

  // The metadata, found from the resource identifier alone as RFC 9728 §3.1 says, is that document.
  const resource = new URL(base)
  const discovery = await oauth.resourceDiscoveryRequest(resource, insecure)
  t.equal(discovery.url, wellKnown, 'oauth4webapi looks where the challenge points')
  t.equal(discovery.headers.get('cache-control'), 'public, max-age=300')
  const rs = await oauth.processResourceDiscoveryResponse(resource, discovery)
  t.equal(rs.resource, base, 'the resource identifier is the base URL')
  t.same(rs.bearer_methods_supported, ['header'])
  t.same([...(rs.scopes_supported ?? [])].sort(), [...spec.scopes].sort())
  t.equal(rs.resource_documentation, `${base}/docs`)

  // Its authorization server gives a token for it (RFC 8707 resource), which the API accepts.
  t.same(rs.authorization_servers, [base])
  const issuer = new URL(String(rs.authorization_servers?.[0]))
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
  t.ok(as.protected_resources?.includes(rs.resource), 'the authorization server lists the resource')
  const client: oauth.Client = { client_id: creds.client_id }
  const token = await oauth.processClientCredentialsResponse(
    as,
    client,
    await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(creds.client_secret),
      new URLSearchParams({ scope: 'read:projects', resource: rs.resource }),
      insecure,
    ),
  )
  const ok = await oauth.protectedResourceRequest(token.access_token, 'GET', projects, undefined, null, insecure)
  t.equal(ok.status, 200, 'the token reads the catalogue')

  // The MCP endpoint is a resource of its own, with its own document at the path RFC 9728 gives it.
  const mcp = new URL(`${base}/mcp`)
  const mcpDiscovery = await oauth.resourceDiscoveryRequest(mcp, insecure)
  t.equal(mcpDiscovery.url, `${wellKnown}/mcp`)
  t.equal((await oauth.processResourceDiscoveryResponse(mcp, mcpDiscovery)).resource, `${base}/mcp`)
})

t.test('a token without the scope: the 403 challenge names the metadata too', async (t) => {
  const { app, base } = await listening(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const res = await fetch(`${base}/leads.json`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(res.status, 403)
  t.equal(
    res.headers.get('www-authenticate'),
    `Bearer realm="studio-api", error="insufficient_scope", scope="read:leads", resource_metadata="${base}/.well-known/oauth-protected-resource"`,
  )
})
