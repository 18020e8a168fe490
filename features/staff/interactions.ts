// The sign-in and consent pages of the provider's interactions (/oauth/sign-in/{uid}): the person
// types an address and gets a 6-digit code by email (or uses a passkey, passkeys.ts), then allows
// or denies the client. Every form carries a token bound to the interaction (CSRF), on top of the
// provider's own interaction cookie (SameSite=Lax). Each step is logged with the staff member's
// id and the client's id, never anything else about them.
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type Provider from 'oidc-provider'
import type { InteractionResults } from 'oidc-provider'
import { clientAddress } from '../../lib/address.js'
import { normalEmail, plausibleEmail, type StaffAccounts } from './accounts.js'
import { isDocumentUrl } from './cimd.js'
import { CODE_TTL_MS, type SignInCodes } from './codes.js'
import { codePage, consentPage, emailPage, errorPage, type FormContext } from './pages.js'
import { PASSKEY_SCRIPT, type Passkeys, parseResponse } from './passkeys.js'
import { interactionPath, sendPage as page } from './provider.js'

export interface InteractionParts {
  provider: Provider
  accounts: StaffAccounts
  codes: SignInCodes
  /** Sends the code to the address; false when it could not be sent (no SMTP_URL, a failure). */
  sendCode: (to: string, code: string, client: string) => Promise<boolean>
  csrfKey: string
  passkeys: Passkeys
}

type Details = Awaited<ReturnType<Provider['interactionDetails']>>

export function registerInteractions(app: FastifyInstance, parts: InteractionParts): Steps {
  const { provider, accounts, codes } = parts
  const csrfOf = (uid: string) => createHmac('sha256', parts.csrfKey).update(`csrf:${uid}`).digest('base64url')
  const csrfOk = (uid: string, given: unknown) => {
    if (typeof given !== 'string') return false
    const want = Buffer.from(csrfOf(uid))
    const got = Buffer.from(given)
    return got.length === want.length && timingSafeEqual(got, want)
  }

  /** Who the client is, as the person should read it: its verified host, or its own name. */
  async function clientOf(details: Details): Promise<{ name: string; verified: boolean; id: string }> {
    const id = String(details.params.client_id)
    const client = await provider.Client.find(id)
    // A metadata document's URL: its host served the document, so the host is who the client is.
    if (isDocumentUrl(id)) return { name: new URL(id).host, verified: true, id }
    return { name: client?.clientName ?? id, verified: false, id }
  }

  async function formOf(details: Details): Promise<FormContext & { clientId: string; verified: boolean }> {
    const client = await clientOf(details)
    return {
      action: interactionPath(details.uid),
      csrf: csrfOf(details.uid),
      client: client.name,
      clientId: client.id,
      verified: client.verified,
    }
  }

  /** The interaction of this request, or an error page (no cookie, expired, another browser's). */
  async function detailsOf(request: FastifyRequest, reply: FastifyReply): Promise<Details | undefined> {
    try {
      const details = await provider.interactionDetails(request.raw, reply.raw)
      if (details.uid !== (request.params as { uid: string }).uid) throw new Error('uid mismatch')
      return details
    } catch {
      page(
        reply,
        400,
        errorPage('This sign-in has expired or belongs to another browser.', 'Start again from the application you were connecting.'),
      )
      return undefined
    }
  }

  async function finish(request: FastifyRequest, reply: FastifyReply, result: InteractionResults) {
    const to = await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: false })
    return reply.code(303).header('cache-control', 'no-store').redirect(to, 303)
  }

  const refuseForm = (reply: FastifyReply) => page(reply, 403, errorPage('This form has expired.', 'Go back and try again.'))

  async function consent(reply: FastifyReply, details: Details, form: FormContext & { verified: boolean }, notice?: string) {
    const staff = await accounts.find(String(details.session?.accountId))
    if (!staff) return page(reply, 400, errorPage('This account no longer exists.', ''))
    const missing = (details.prompt.details.missingResourceScopes ?? {}) as Record<string, string[]>
    const scopes = [...new Set(Object.values(missing).flat())]
    return page(
      reply,
      200,
      consentPage({
        ...form,
        who: staff.email,
        redirectHost: new URL(String(details.params.redirect_uri)).host,
        scopes,
        passkeyOffer: !(await parts.passkeys.has(staff.id)),
        ...(notice !== undefined && { notice }),
      }),
    )
  }

  app.get<{ Params: { uid: string } }>('/oauth/sign-in/:uid', async (request, reply) => {
    const details = await detailsOf(request, reply)
    if (!details) return reply
    const form = await formOf(details)
    if (details.prompt.name === 'login') return page(reply, 200, emailPage(form, undefined, true))
    return consent(reply, details, form)
  })

  app.post<{ Params: { uid: string }; Body: { csrf?: string; email?: string } }>('/oauth/sign-in/:uid/email', async (request, reply) => {
    const details = await detailsOf(request, reply)
    if (!details) return reply
    if (!csrfOk(details.uid, request.body?.csrf)) return refuseForm(reply)
    const form = await formOf(details)
    const email = typeof request.body?.email === 'string' ? normalEmail(request.body.email) : ''
    if (!plausibleEmail(email)) return page(reply, 400, emailPage(form, 'Type your work email address.', true))
    const staff = await accounts.findByEmail(email)
    const issued = await codes.issue(email, staff, clientAddress(request))
    if ('refused' in issued) {
      return page(
        reply,
        429,
        emailPage(form, 'Too many codes were asked for this address or from this network. Wait an hour, or use a passkey.', true),
      )
    }
    if (staff) {
      const sent = await parts.sendCode(staff.email, issued.code, form.client)
      request.log.info({ event: 'staff.code_sent', staff_id: staff.id, client_id: form.clientId, sent }, 'staff sign-in: code emailed')
    } else {
      request.log.info(
        { event: 'staff.code_unknown_address', client_id: form.clientId },
        'staff sign-in: a code was asked for an address that is no staff’s (nothing sent)',
      )
    }
    return page(reply, 200, codePage(form, issued.codeId))
  })

  app.post<{ Params: { uid: string }; Body: { csrf?: string; cid?: string; code?: string } }>(
    '/oauth/sign-in/:uid/code',
    async (request, reply) => {
      const details = await detailsOf(request, reply)
      if (!details) return reply
      if (!csrfOk(details.uid, request.body?.csrf)) return refuseForm(reply)
      const form = await formOf(details)
      const codeId = typeof request.body?.cid === 'string' ? request.body.cid : ''
      const checked = await codes.check(codeId, String(request.body?.code ?? '').trim())
      if ('refused' in checked) {
        request.log.info({ event: 'staff.code_refused', client_id: form.clientId, why: checked.refused }, 'staff sign-in: code refused')
        if (checked.refused === 'spent')
          return page(reply, 400, emailPage(form, 'This code can no longer be used. Ask for a new one.', true))
        return page(reply, 400, codePage(form, codeId, 'That code is not right. Check the latest email and try again.'))
      }
      request.log.info(
        { event: 'staff.sign_in', staff_id: checked.staffId, client_id: form.clientId, method: 'email_code' },
        'staff sign-in: signed in',
      )
      return finish(request, reply, { login: { accountId: checked.staffId, amr: ['otp'] } })
    },
  )

  app.post<{ Params: { uid: string }; Body: { csrf?: string; decision?: string } }>(
    '/oauth/sign-in/:uid/consent',
    async (request, reply) => {
      const details = await detailsOf(request, reply)
      if (!details) return reply
      if (!csrfOk(details.uid, request.body?.csrf) || details.prompt.name !== 'consent') return refuseForm(reply)
      const accountId = String(details.session?.accountId)
      const clientId = String(details.params.client_id)
      if (request.body?.decision !== 'allow') {
        request.log.info({ event: 'staff.consent_denied', staff_id: accountId, client_id: clientId }, 'staff sign-in: access denied')
        return finish(request, reply, { error: 'access_denied', error_description: 'The person denied access.' })
      }
      const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId, clientId })
      if (!grant) return page(reply, 400, errorPage('This sign-in has expired.', 'Start again from the application you were connecting.'))
      const prompt = details.prompt.details as { missingOIDCScope?: string[]; missingResourceScopes?: Record<string, string[]> }
      if (prompt.missingOIDCScope?.length) grant.addOIDCScope(prompt.missingOIDCScope.join(' '))
      for (const [resource, scopes] of Object.entries(prompt.missingResourceScopes ?? {}))
        grant.addResourceScope(resource, scopes.join(' '))
      const grantId = await grant.save()
      request.log.info(
        { event: 'staff.consent', staff_id: accountId, client_id: clientId, grant_id: grantId },
        'staff sign-in: access allowed',
      )
      return finish(request, reply, { consent: { grantId } })
    },
  )
  return { detailsOf, csrfOk, refuseForm, formOf, finish, consent }
}

export const CODE_MINUTES = CODE_TTL_MS / 60_000

/** The passkey routes: the script, each ceremony's options, sign-in by passkey, adding one at consent. */
export function registerPasskeyRoutes(app: FastifyInstance, parts: InteractionParts, steps: Steps): void {
  const { accounts, passkeys } = parts
  app.get('/oauth/passkey.js', async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(PASSKEY_SCRIPT),
  )

  app.get<{ Params: { uid: string }; Querystring: { purpose?: string } }>('/oauth/sign-in/:uid/passkey-options', async (request, reply) => {
    const details = await steps.detailsOf(request, reply)
    if (!details) return reply
    reply.header('cache-control', 'no-store')
    if (request.query.purpose === 'register') {
      const staff = details.session?.accountId ? await accounts.find(String(details.session.accountId)) : undefined
      if (!staff) return reply.code(403).send({ code: 'forbidden', message: 'Sign in first.' })
      return passkeys.registrationOptions(details.uid, staff)
    }
    return passkeys.authenticationOptions(details.uid)
  })

  app.post<{ Params: { uid: string }; Body: { csrf?: string; response?: string } }>(
    '/oauth/sign-in/:uid/passkey',
    async (request, reply) => {
      const details = await steps.detailsOf(request, reply)
      if (!details) return reply
      if (!steps.csrfOk(details.uid, request.body?.csrf)) return steps.refuseForm(reply)
      const form = await steps.formOf(details)
      const staffId = await passkeys.authenticate(details.uid, parseResponse(request.body?.response))
      if (!staffId || !(await accounts.find(staffId))) {
        request.log.info({ event: 'staff.passkey_refused', client_id: form.clientId }, 'staff sign-in: passkey refused')
        return page(reply, 400, emailPage(form, 'That passkey did not work here. Use the emailed code instead.', true))
      }
      request.log.info(
        { event: 'staff.sign_in', staff_id: staffId, client_id: form.clientId, method: 'passkey' },
        'staff sign-in: signed in',
      )
      return steps.finish(request, reply, { login: { accountId: staffId, amr: ['hwk'] } })
    },
  )

  app.post<{ Params: { uid: string }; Body: { csrf?: string; response?: string } }>(
    '/oauth/sign-in/:uid/passkey-add',
    async (request, reply) => {
      const details = await steps.detailsOf(request, reply)
      if (!details) return reply
      if (!steps.csrfOk(details.uid, request.body?.csrf) || details.prompt.name !== 'consent') return steps.refuseForm(reply)
      const form = await steps.formOf(details)
      const staff = await accounts.find(String(details.session?.accountId))
      if (!staff) return page(reply, 400, errorPage('This account no longer exists.', ''))
      const added = await passkeys.register(details.uid, staff, parseResponse(request.body?.response))
      if (added)
        request.log.info({ event: 'staff.passkey_added', staff_id: staff.id, client_id: form.clientId }, 'staff sign-in: passkey added')
      return steps.consent(reply, details, form, added ? 'Passkey added: use it to sign in next time.' : 'The passkey could not be added.')
    },
  )
}

export interface Steps {
  detailsOf(request: FastifyRequest, reply: FastifyReply): Promise<Details | undefined>
  csrfOk(uid: string, given: unknown): boolean
  refuseForm(reply: FastifyReply): FastifyReply
  formOf(details: Details): Promise<FormContext & { clientId: string; verified: boolean }>
  finish(request: FastifyRequest, reply: FastifyReply, result: InteractionResults): Promise<FastifyReply>
  consent(reply: FastifyReply, details: Details, form: FormContext & { verified: boolean }, notice?: string): Promise<FastifyReply>
}
