// oidc-provider reads its requests' bodies itself; mounted in Fastify, which has read them already,
// it would fall back to the parsed body with a warning ("already parsed request body detected").
// mount.ts replays the body to it as a stream instead: the whole flow (DCR, the code exchanged,
// a refresh, a revocation) writes no such warning, neither in the app's log nor on the process's
// console, where the library writes it. The library warns once per process: this file is its own
// process, and these are its first requests to the provider. SQLite, and PostgreSQL under DATABASE_URL.
import * as oauth from 'oauth4webapi'
import t from 'tap'
import { captureLog } from '../helpers/log.js'
import { live } from '../helpers/mcp.js'
import { smtpServer } from '../helpers/smtp.js'
import { authorizationUrl, Browser, exchange, insecure, registeredClient, signInByCode } from '../helpers/staff.js'

t.test('requests through the provider: their bodies read, and no "already parsed" warning', async (t) => {
  const console_: string[] = []
  const write = process.stderr.write.bind(process.stderr)
  const warn = console.warn
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    console_.push(String(chunk))
    return write(chunk, ...rest)
  }) as typeof process.stderr.write
  console.warn = (...args: unknown[]) => {
    console_.push(args.map(String).join(' '))
    warn(...args)
  }
  t.teardown(() => {
    process.stderr.write = write
    console.warn = warn
  })

  const log = captureLog()
  const smtp = await smtpServer(t)
  const server = await live(t, { smtpUrl: smtp.url, logLevel: 'info' }, { logger: { level: 'info', stream: log.stream } })
  await server.app.staff.accounts.add('kai@studio.test', 'Kai')

  const client = await registeredClient(server.base, 'http://127.0.0.1:9/callback', 'Body test assistant')
  const registered = await server.app.store.db
    .selectFrom('oidc_models')
    .select('payload')
    .where('model', '=', 'Client')
    .where('id', '=', client.client.client_id)
    .executeTakeFirstOrThrow()
  t.match(JSON.parse(registered.payload), { client_name: 'Body test assistant' }, 'DCR: the JSON body reached the provider')

  const auth = await authorizationUrl(client)
  const tokens = await exchange(client, auth, await signInByCode(new Browser(), auth, client, smtp, 'kai@studio.test'))
  t.ok(tokens.access_token, 'the code exchanged at /api/token (a form body)')
  const refreshed = await oauth.processRefreshTokenResponse(
    client.as,
    client.client,
    await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), tokens.refresh_token as string, insecure),
  )
  t.ok(refreshed.refresh_token, 'refreshed')
  const revoked = await oauth.revocationRequest(client.as, client.client, oauth.None(), refreshed.refresh_token as string, insecure)
  t.equal(revoked.status, 200, 'revoked')
  const after = await oauth.refreshTokenGrantRequest(client.as, client.client, oauth.None(), refreshed.refresh_token as string, insecure)
  t.equal(after.status, 400, 'the revocation read its body: that refresh token is refused now')

  t.ok(
    log.lines().some((l) => l.event === 'staff.refresh'),
    'the app log holds the flow',
  )
  t.notMatch(log.raw.join(''), /already parsed/, 'no warning in the app’s log')
  t.notMatch(console_.join(''), /already parsed|oidc-provider WARNING/, 'nor on the console')
})
