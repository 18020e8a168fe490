// A person's sign-in driven over HTTP, as a browser without JavaScript would: a cookie jar,
// redirects followed by hand (so each step can be checked), forms read from the pages. The code
// comes from a real SMTP server (helpers/smtp.ts).
import type { FastifyInstance } from 'fastify'
import * as oauth from 'oauth4webapi'
import { leadOf, tokenFor } from './app.js'
import type { SmtpServer } from './smtp.js'

export const insecure = { [oauth.allowInsecureRequests]: true }

export class Browser {
  readonly cookies = new Map<string, string>()

  async go(url: string, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as object), ...(cookie && { cookie }) } })
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';')
      const eq = (pair as string).indexOf('=')
      const name = (pair as string).slice(0, eq).trim()
      const value = (pair as string).slice(eq + 1).trim()
      const expired = attrs.some((a) => /^\s*expires=Thu, 01 Jan 1970/i.test(a)) || value === ''
      if (expired) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return res
  }

  /** Follows redirects on this server until a page answers or a redirect leaves for `stopAt`. */
  async follow(url: string, stopAt: string, init: RequestInit = {}): Promise<{ res: Response; url: string }> {
    let res = await this.go(url, init)
    let at = url
    for (let i = 0; i < 10 && res.status >= 300 && res.status < 400; i++) {
      at = new URL(res.headers.get('location') as string, at).toString()
      if (at.startsWith(stopAt)) return { res, url: at }
      res = await this.go(at)
    }
    return { res, url: at }
  }

  post(url: string, form: Record<string, string>): Promise<Response> {
    return this.go(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form).toString(),
    })
  }
}

/** A hidden field's value in a page. */
export function field(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (!m) throw new Error(`no field ${name} in the page: ${html.slice(0, 400)}`)
  return m[1] as string
}

export interface PublicClient {
  as: oauth.AuthorizationServer
  client: oauth.Client
  redirectUri: string
}

/** The authorization server's metadata (RFC 8414) at `base`, the issuer. */
export async function discovery(base: string): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(base)
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
}

/** Discovery, then a public client registered by DCR. */
export async function registeredClient(
  base: string,
  redirectUri = 'http://127.0.0.1:9/callback',
  name = 'Test assistant',
): Promise<PublicClient> {
  const as = await discovery(base)
  const res = await fetch(as.registration_endpoint as string, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }),
  })
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`)
  const registered = (await res.json()) as { client_id: string }
  return { as, client: { client_id: registered.client_id, token_endpoint_auth_method: 'none' }, redirectUri }
}

export interface Authorization {
  url: URL
  verifier: string
  state: string
}

export async function authorizationUrl(c: PublicClient, params: Record<string, string> = {}): Promise<Authorization> {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(c.as.authorization_endpoint as string)
  url.searchParams.set('client_id', c.client.client_id)
  url.searchParams.set('redirect_uri', c.redirectUri)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('scope', 'read:leads')
  url.searchParams.set('state', state)
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier))
  url.searchParams.set('code_challenge_method', 'S256')
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  return { url, verifier, state }
}

export const sentTo = (smtp: SmtpServer, to: string): number =>
  smtp.messages.filter((x) => x.envelope.rcptTo.some((r) => r.address === to)).length

/** The code the last email to `to` carries. */
export async function codeFrom(smtp: SmtpServer, to: string, count: number): Promise<string> {
  await smtp.waitFor((m) => m.filter((x) => x.envelope.rcptTo.some((r) => r.address === to)).length >= count, 20_000)
  const last = smtp.messages.filter((x) => x.envelope.rcptTo.some((r) => r.address === to)).at(-1)
  const code = /\b(\d{6})\b/.exec(last?.parsed.subject ?? '')?.[1]
  if (!code) throw new Error('no code in the email')
  return code
}

/**
 * Signs in by emailed code from the sign-in page the authorization request leads to, and
 * answers the consent page; the redirect to the client (its URL), or the page where it stopped.
 */
export async function signInByCode(
  browser: Browser,
  auth: Authorization,
  c: PublicClient,
  smtp: SmtpServer,
  email: string,
  decision: 'allow' | 'deny' = 'allow',
): Promise<URL> {
  const first = await browser.follow(auth.url.toString(), c.redirectUri)
  if (first.res.status !== 200) throw new Error(`sign-in page: ${first.res.status} ${await first.res.text()}`)
  const page = first.url
  const html = await first.res.text()
  const before = sentTo(smtp, email)
  const codePage = await browser.post(`${page}/email`, { csrf: field(html, 'csrf'), email })
  const codeHtml = await codePage.text()
  const code = await codeFrom(smtp, email, before + 1)
  const signedIn = await browser.post(`${page}/code`, { csrf: field(codeHtml, 'csrf'), cid: field(codeHtml, 'cid'), code })
  if (signedIn.status !== 303) throw new Error(`code: ${signedIn.status} ${await signedIn.text()}`)
  const consent = await browser.follow(new URL(signedIn.headers.get('location') as string, page).toString(), c.redirectUri)
  if (consent.url.startsWith(c.redirectUri)) return new URL(consent.url)
  const consentHtml = await consent.res.text()
  const done = await browser.post(`${consent.url}/consent`, { csrf: field(consentHtml, 'csrf'), decision })
  const back = await browser.follow(new URL(done.headers.get('location') as string, consent.url).toString(), c.redirectUri)
  return new URL(back.url)
}

/** The code exchanged (oauth4webapi checks `iss` and `state`). */
export async function exchange(c: PublicClient, auth: Authorization, callback: URL) {
  const params = oauth.validateAuthResponse(c.as, c.client, callback, auth.state)
  const res = await oauth.authorizationCodeGrantRequest(c.as, c.client, oauth.None(), params, c.redirectUri, auth.verifier, insecure)
  return oauth.processAuthorizationCodeResponse(c.as, c.client, res)
}

/** A lead stored through the REST API with a machine token; its name. */
export async function submitLead(app: FastifyInstance, n: number | string): Promise<string> {
  const { token } = await tokenFor(app, ['write:leads'])
  const lead = leadOf(n)
  const res = await app.inject({
    method: 'POST',
    url: '/scripts/enquiry_backend.php',
    headers: { authorization: `Bearer ${token}` },
    payload: lead,
  })
  if (res.statusCode !== 200) throw new Error(`submit: ${res.statusCode} ${res.body}`)
  return lead.name
}
