// Staff sign-in (issue 34), in process on a listening app: a public client registered by DCR, a
// person signing in with a code from a real SMTP server, consent, oauth4webapi exchanging the
// code, recent_leads over MCP with the person's token, refresh rotation, and the refusals.
// Runs on SQLite, and on PostgreSQL under DATABASE_URL (helpers/app.ts).
import * as oauth from 'oauth4webapi'
import t, { type Test } from 'tap'
import { sweepExpired, UNUSED_CLIENT_DAYS } from '../../features/staff/adapter.js'
import { tokenFor } from '../helpers/app.js'
import { connect, live, textOf } from '../helpers/mcp.js'
import { smtpServer } from '../helpers/smtp.js'
import {
  authorizationUrl,
  Browser,
  codeFrom,
  exchange,
  field,
  insecure,
  registeredClient,
  sentTo,
  signInByCode,
  submitLead,
} from '../helpers/staff.js'

const STAFF = 'ada@studio.test'

async function setup(t: Test) {
  const smtp = await smtpServer(t)
  const server = await live(t, { smtpUrl: smtp.url })
  const person = await server.app.staff.accounts.add(STAFF, 'Ada')
  const client = await registeredClient(server.base)
  return { smtp, server, person, client }
}

t.test('a person signs in by emailed code, allows a DCR client, which reads leads over MCP and refreshes', async (t) => {
  const { smtp, server, person, client } = await setup(t)
  const lead = await submitLead(server.app, 7331)
  const auth = await authorizationUrl(client)
  const callback = await signInByCode(new Browser(), auth, client, smtp, STAFF)
  t.equal(callback.searchParams.get('iss'), server.base, 'iss in the authorization response (RFC 9207)')
  const tokens = await exchange(client, auth, callback)
  t.ok(tokens.refresh_token, 'a refresh token')
  t.ok((tokens.expires_in ?? 0) <= 600, 'the access token lasts 10 minutes or less')
  const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1] as string, 'base64url').toString())
  t.equal(claims.sub, person.id, 'sub is the person')
  t.equal(claims.person, person.id, 'the person claim names them')
  t.equal(claims.client_id, client.client.client_id)
  t.equal(claims.aud, `${server.base}/mcp`, 'audience /mcp when the client names no resource')
  t.equal(claims.scope, 'read:leads')

  const signin = await fetch(`${server.base}/mcp?signin`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${tokens.access_token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  })
  t.equal(signin.status, 200, '/mcp?signin answers the person’s token')
  const mcp = await connect(t, server.base, tokens.access_token)
  const result = await mcp.callTool({ name: 'recent_leads', arguments: {} })
  t.notOk(result.isError, 'recent_leads answers the person’s token')
  t.match(textOf(result), lead, 'recent_leads sees the lead')

  const refreshed = await oauth.processRefreshTokenResponse(
    client.as,
    client.client,
    await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure),
  )
  t.ok(refreshed.access_token, 'refreshed')
  t.not(refreshed.refresh_token, tokens.refresh_token, 'the refresh token rotated')
  const again = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure)
  t.equal(again.status, 400, 'the old refresh token is refused')
  t.match(await again.json(), { error: 'invalid_grant' })
  const after = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), refreshed.refresh_token as string, insecure)
  t.equal(after.status, 400, 'and its reuse revoked the grant: the newest refresh token is refused too')
})

t.test('refusals', async (t) => {
  const { smtp, server, person, client } = await setup(t)

  t.test('a redirect URI not registered: an error page, no redirect', async (t) => {
    const auth = await authorizationUrl(client, { redirect_uri: 'https://evil.test/callback' })
    const res = await new Browser().go(auth.url.toString())
    t.equal(res.status, 400)
    t.equal(res.headers.get('location'), null, 'no redirect')
    t.match(res.headers.get('content-type'), /text\/html/)
    t.match(await res.text(), /redirect_uri/)
  })

  t.test('no PKCE, or plain: refused', async (t) => {
    const none = await authorizationUrl(client)
    none.url.searchParams.delete('code_challenge')
    none.url.searchParams.delete('code_challenge_method')
    const res = await new Browser().go(none.url.toString())
    t.equal(res.status, 303, 'answered to the client, whose redirect URI is registered')
    const back = new URL(res.headers.get('location') as string)
    t.equal(back.searchParams.get('error'), 'invalid_request')
    t.match(back.searchParams.get('error_description'), /PKCE|code_challenge/i)
    t.equal(back.searchParams.get('iss'), server.base, 'iss in the error response too')
    const plain = await authorizationUrl(client, { code_challenge_method: 'plain' })
    const res2 = await new Browser().go(plain.url.toString())
    const back2 = new URL(res2.headers.get('location') as string)
    t.equal(back2.searchParams.get('error'), 'invalid_request', 'plain refused')
  })

  t.test('a code used twice: refused, and the tokens it gave revoked', async (t) => {
    const auth = await authorizationUrl(client)
    const callback = await signInByCode(new Browser(), auth, client, smtp, STAFF)
    const tokens = await exchange(client, auth, callback)
    const params = oauth.validateAuthResponse(client.as, client.client, callback, auth.state)
    const twice = await oauth.authorizationCodeGrantRequest(
      client.as,
      client.client,
      oauth.None(),
      params,
      client.redirectUri,
      auth.verifier,
      insecure,
    )
    t.equal(twice.status, 400)
    t.match(await twice.json(), { error: 'invalid_grant' })
    const refresh = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure)
    t.equal(refresh.status, 400, 'the refresh token the code gave is revoked')
  })

  t.test('five wrong codes end the code', async (t) => {
    const browser = new Browser()
    const auth = await authorizationUrl(client)
    const first = await browser.follow(auth.url.toString(), client.redirectUri)
    const html = await first.res.text()
    const before = sentTo(smtp, STAFF)
    const codePage = await (await browser.post(`${first.url}/email`, { csrf: field(html, 'csrf'), email: STAFF })).text()
    const code = await codeFrom(smtp, STAFF, before + 1)
    const wrong = code === '000000' ? '111111' : '000000'
    const form = { csrf: field(codePage, 'csrf'), cid: field(codePage, 'cid') }
    for (let i = 1; i <= 5; i++) {
      const res = await browser.post(`${first.url}/code`, { ...form, code: wrong })
      t.equal(res.status, 400, `wrong code ${i} refused`)
    }
    const right = await browser.post(`${first.url}/code`, { ...form, code })
    t.equal(right.status, 400, 'after five wrong tries, even the right code is refused')
    t.match(await right.text(), /no longer be used/)
  })

  t.test('an address that is not staff: the same page, no email', async (t) => {
    const browser = new Browser()
    const auth = await authorizationUrl(client)
    const first = await browser.follow(auth.url.toString(), client.redirectUri)
    const html = await first.res.text()
    const before = smtp.messages.length
    const stranger = await browser.post(`${first.url}/email`, { csrf: field(html, 'csrf'), email: 'stranger@elsewhere.test' })
    const staffPage = await browser.post(`${first.url}/email`, { csrf: field(html, 'csrf'), email: STAFF })
    t.equal(stranger.status, staffPage.status)
    const strip = (page: string) => page.replace(/name="cid" value="[^"]*"/, '')
    t.equal(strip(await stranger.text()), strip(await staffPage.text()), 'the same page, but for the code id')
    await codeFrom(smtp, STAFF, sentTo(smtp, STAFF))
    t.equal(
      smtp.messages.filter((m) => m.envelope.rcptTo.some((r) => r.address === 'stranger@elsewhere.test')).length,
      0,
      'no email to the stranger',
    )
    t.ok(smtp.messages.length >= before + 1)
  })

  t.test('consent denied: access_denied to the client', async (t) => {
    const auth = await authorizationUrl(client)
    const callback = await signInByCode(new Browser(), auth, client, smtp, STAFF, 'deny')
    t.equal(callback.searchParams.get('error'), 'access_denied')
    t.equal(callback.searchParams.get('state'), auth.state)
    t.equal(callback.searchParams.get('iss'), server.base)
  })

  t.test('/mcp?signin without a token: 401 with the challenge (what Claude reads); /mcp stays public', async (t) => {
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    const res = await server.app.inject({ method: 'POST', url: '/mcp?signin', headers, payload: list })
    t.equal(res.statusCode, 401)
    t.match(
      res.headers['www-authenticate'],
      /^Bearer .*scope="read:leads".*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/,
    )
    t.notMatch(res.headers['www-authenticate'], /error=/, 'no error code when no token was sent (RFC 6750 §3.1)')
    const open = await server.app.inject({ method: 'POST', url: '/mcp', headers, payload: list })
    t.equal(open.statusCode, 200, 'plain /mcp answers without a token')
  })

  t.test('a REST API token at /mcp: 401', async (t) => {
    const { token } = await tokenFor(server.app, ['read:leads'])
    const res = await server.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    })
    t.equal(res.statusCode, 401)
    t.match(res.headers['www-authenticate'], /invalid_token.*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource\/mcp"/)
  })

  t.test('a removed staff member: refresh token refused, access token refused', async (t) => {
    const auth = await authorizationUrl(client)
    const callback = await signInByCode(new Browser(), auth, client, smtp, STAFF)
    const tokens = await exchange(client, auth, callback)
    t.ok(await server.app.staff.accounts.remove(person.id))
    const refresh = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure)
    t.equal(refresh.status, 400)
    t.match(await refresh.json(), { error: 'invalid_grant' })
    const res = await server.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    })
    t.equal(
      res.statusCode,
      401,
      'the access token is refused (a person’s standing is read on first use, then kept CLIENT_STATUS_TTL_SECONDS)',
    )
    t.same(await server.app.staff.accounts.sessions(person.id), [], 'no session left')
  })
})

t.test('registered clients nobody allowed are swept after a week; allowed ones stay', async (t) => {
  const { smtp, server, client } = await setup(t)
  const unused = await registeredClient(server.base, 'http://127.0.0.1:9/unused', 'Unused')
  const auth = await authorizationUrl(client)
  await exchange(client, auth, await signInByCode(new Browser(), auth, client, smtp, STAFF))
  const clients = async () =>
    (await server.app.store.db.selectFrom('oidc_models').select('id').where('model', '=', 'Client').execute()).map((r) => r.id).sort()
  t.same(await clients(), [client.client.client_id, unused.client.client_id].sort())
  await sweepExpired(server.app.store.db, Date.now() + (UNUSED_CLIENT_DAYS - 1) * 24 * 3600_000)
  t.equal((await clients()).length, 2, 'kept within the week')
  await sweepExpired(server.app.store.db, Date.now() + (UNUSED_CLIENT_DAYS + 1) * 24 * 3600_000)
  t.same(await clients(), [client.client.client_id], 'after it, only the client with a grant')
})
