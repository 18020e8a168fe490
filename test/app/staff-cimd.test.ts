// A client named by its Client ID Metadata Document (features/staff/cimd.ts): the test serves the
// document over https (helpers/cimd.ts: a certificate made for this test, trusted through
// https.globalAgent, as an operator's CA bundle would be), the person signs in and consents, the
// consent page names the client by its verified host, and the code exchange works with no
// registration. Documents that may not be used are refused. WEBHOOKS_ALLOW_PRIVATE lets the
// loopback document through, as it lets webhooks; without it the same URL is refused (the
// webhooks' address rules). The same flow in a real browser: test/system/browser/staff.test.ts.
import t from 'tap'
import { clientDocument, documentClient, documentServer } from '../helpers/cimd.js'
import { live } from '../helpers/mcp.js'
import { smtpServer } from '../helpers/smtp.js'
import { authorizationUrl, Browser, codeFrom, exchange, field, type PublicClient, sentTo } from '../helpers/staff.js'

const STAFF = 'lin@studio.test'

t.test('a client by its metadata document: sign-in, consent by verified host, code exchange; bad documents refused', async (t) => {
  const docs = await documentServer(t)
  const { origin } = docs
  const redirectUri = 'http://127.0.0.1:9/cimd-callback'
  const id = `${origin}/client.json`
  docs.documents.set('/client.json', clientDocument(id, redirectUri, 'Claims to be Claude'))
  docs.documents.set('/other.json', JSON.stringify({ client_id: `${origin}/client.json`, redirect_uris: [redirectUri] }))
  docs.documents.set(
    '/secret.json',
    JSON.stringify({ client_id: `${origin}/secret.json`, redirect_uris: [redirectUri], token_endpoint_auth_method: 'client_secret_basic' }),
  )
  docs.documents.set(
    '/large.json',
    JSON.stringify({ client_id: `${origin}/large.json`, redirect_uris: [redirectUri], client_name: 'x'.repeat(6000) }),
  )

  const smtp = await smtpServer(t)
  const server = await live(t, { smtpUrl: smtp.url, webhooksAllowPrivate: true })
  await server.app.staff.accounts.add(STAFF, 'Lin')
  const client = await documentClient(server.base, id, redirectUri)
  const { as } = client
  t.equal(as.client_id_metadata_document_supported, true, 'the metadata says so')

  const browser = new Browser()
  const auth = await authorizationUrl(client)
  const first = await browser.follow(auth.url.toString(), redirectUri)
  t.equal(first.res.status, 200, 'the sign-in page, with no registration')
  const html = await first.res.text()
  t.match(html, `${docs.host} asks`, 'the client named by the host that served its document')
  const before = sentTo(smtp, STAFF)
  const codePage = await (await browser.post(`${first.url}/email`, { csrf: field(html, 'csrf'), email: STAFF })).text()
  const code = await codeFrom(smtp, STAFF, before + 1)
  const signedIn = await browser.post(`${first.url}/code`, { csrf: field(codePage, 'csrf'), cid: field(codePage, 'cid'), code })
  const consent = await browser.follow(new URL(signedIn.headers.get('location') as string, first.url).toString(), redirectUri)
  const consentHtml = await consent.res.text()
  t.notMatch(consentHtml, /Claims to be Claude/, 'its self-given name is not what the person reads')
  t.notMatch(consentHtml, /not verified/)
  const done = await browser.post(`${consent.url}/consent`, { csrf: field(consentHtml, 'csrf'), decision: 'allow' })
  const back = await browser.follow(new URL(done.headers.get('location') as string, consent.url).toString(), redirectUri)
  const tokens = await exchange(client, auth, new URL(back.url))
  t.ok(tokens.access_token, 'tokens for the document’s client')
  const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1] as string, 'base64url').toString())
  t.equal(claims.client_id, id)
  const fetched = docs.fetches
  await authorizationUrl(client).then((a) => new Browser().go(a.url.toString()))
  t.equal(docs.fetches, fetched, 'the document is cached (its max-age)')

  for (const [path, why] of [
    ['/other.json', 'a document whose client_id is another URL'],
    ['/secret.json', 'a document of a confidential client'],
    ['/large.json', 'a document over 5 KB'],
    ['/missing.json', 'a document that is not there'],
  ] as const) {
    const bad: PublicClient = { as, client: { client_id: `${origin}${path}`, token_endpoint_auth_method: 'none' }, redirectUri }
    const res = await new Browser().go((await authorizationUrl(bad)).url.toString())
    t.equal(res.status, 400, `${why}: refused`)
    t.equal(res.headers.get('location'), null, `${why}: no redirect`)
  }
  const refusedFetches = docs.fetches
  const again: PublicClient = { as, client: { client_id: `${origin}/missing.json`, token_endpoint_auth_method: 'none' }, redirectUri }
  await new Browser().go((await authorizationUrl(again)).url.toString())
  t.equal(docs.fetches, refusedFetches, 'a refused document is not fetched again at once (no amplification)')
})
