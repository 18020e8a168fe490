// Staff sign-in (issue 34), in process on a listening app: a public client registered by DCR, a
// person signing in with a code from a real SMTP server, consent, oauth4webapi exchanging the
// code, recent_leads over MCP with the person's token, refresh rotation, and the refusals.
// Runs on SQLite, and on PostgreSQL under DATABASE_URL (helpers/app.ts).
import * as oauth from 'oauth4webapi'
import t, { type Test } from 'tap'
import { connect, live, textOf } from './helpers/mcp.js'
import { smtpServer } from './helpers/smtp.js'
import { authorizationUrl, Browser, exchange, insecure, registeredClient, signInByCode, submitLead } from './helpers/staff.js'

t.setTimeout(120_000)

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
