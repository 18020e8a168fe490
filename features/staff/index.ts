// The staff feature: the studio's people sign in (emailed code, passkey) and allow assistants
// (Claude, ChatGPT, VS Code, the MCP Inspector) to read their leads through /mcp. The
// authorization server is oidc-provider (provider.ts) on our store (adapter.ts), mounted in this
// app (mount.ts), with our sign-in and consent pages (interactions.ts). The RFC 8414 metadata of
// the one issuer (plugins/auth) gains the person-facing endpoints here.
import fp from 'fastify-plugin'
import type { Config } from '../../config.js'
import { loadSigningKey } from '../../plugins/auth/keys.js'
import { createMailer, type Mailer } from '../email/transport.js'
import { StaffAccounts } from './accounts.js'
import { sweepExpired } from './adapter.js'
import { MetadataDocuments } from './cimd.js'
import { SignInCodes } from './codes.js'
import { registerEnrolRoutes } from './enrol.js'
import { StaffEnrolments } from './enrolments.js'
import { registerInteractions, registerPasskeyRoutes } from './interactions.js'
import { mountProvider } from './mount.js'
import { setSite } from './pages.js'
import { Passkeys } from './passkeys.js'
import { cookieKeys, createProvider, PERSON_SCOPE, ROUTES } from './provider.js'

declare module 'fastify' {
  interface FastifyInstance {
    staff: { accounts: StaffAccounts }
  }
}

const SWEEP_EVERY_MS = 10 * 60_000

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const db = app.store.db
    const accounts = new StaffAccounts(db)
    const codes = new SignInCodes(db)
    const key = loadSigningKey(config, false)
    const resources = app.auth.resources
    setSite(app.site)

    const provider = createProvider({
      config,
      db,
      key,
      resources,
      accounts,
      log: app.log,
      documents: new MetadataDocuments(config.webhooksAllowPrivate, (id, why) =>
        app.log.info(
          { event: 'staff.client_document_refused', client_id: id, reason: why },
          'staff sign-in: a client id metadata document could not be used',
        ),
      ),
    })
    provider.on('grant.success', (ctx) => {
      const grant = ctx.oidc.params?.grant_type
      app.log.info(
        {
          event: grant === 'refresh_token' ? 'staff.refresh' : 'staff.token',
          staff_id: ctx.oidc.account?.accountId,
          client_id: ctx.oidc.client?.clientId,
        },
        'staff sign-in: tokens issued',
      )
    })
    provider.on('grant.error', (ctx, err) => {
      app.log.info(
        {
          event: 'staff.token_refused',
          client_id: ctx.oidc.client?.clientId,
          err_code: (err as { error?: string }).error,
          reason: err.message,
        },
        'staff sign-in: token request refused',
      )
    })
    provider.on('grant.revoked', (ctx, grantId) => {
      app.log.info(
        { event: 'staff.grant_revoked', client_id: ctx.oidc.client?.clientId, grant_id: grantId },
        'staff sign-in: grant revoked',
      )
    })
    provider.on('refresh_token.destroyed', (token) => {
      app.log.info(
        { event: 'staff.refresh_token_ended', staff_id: token.accountId, client_id: token.clientId },
        'staff sign-in: refresh token ended',
      )
    })
    provider.on('registration_create.success', (_ctx, client) => {
      app.log.info({ event: 'staff.client_registered', client_id: client.clientId }, 'staff sign-in: client registered (DCR)')
    })

    let mailer: Mailer | undefined
    // Said only where it matters: a studio with staff accounts and no way to email them a code.
    app.addHook('onReady', async () => {
      if (config.smtpUrl || (await accounts.list()).length === 0) return
      app.log.warn(
        'SMTP_URL is not set: staff sign-in codes cannot be emailed (staff sign in with a passkey, added through an enrolment link: npm run staff -- enrol --email ADDRESS)',
      )
    })
    const sendCode = async (to: string, code: string, client: string): Promise<boolean> => {
      if (!config.smtpUrl) return false
      mailer ??= await createMailer({ smtpUrl: config.smtpUrl, timeoutMs: config.webhooksTimeoutSeconds * 1000 })
      try {
        await mailer.send({
          from: config.leadEmailFrom,
          to,
          subject: `${code} is your sign-in code`,
          text: `${code} is your code to sign in to ${app.playbook.studio.name} (${client} asked).\n\nIt works once, for 10 minutes. If you did not ask for it, ignore this email: nobody can sign in without the code.\n`,
        })
        return true
      } catch (err) {
        app.log.warn({ err: (err as Error).message }, 'staff sign-in: the code email could not be sent')
        return false
      }
    }

    mountProvider(app, provider)
    const csrfKey = cookieKeys(key)[0] as string
    const parts = {
      provider,
      accounts,
      codes,
      sendCode,
      csrfKey,
      passkeys: new Passkeys(db, config.publicBaseUrl, csrfKey, app.playbook.studio.name),
    }
    registerPasskeyRoutes(app, parts, registerInteractions(app, parts))
    registerEnrolRoutes(app, { db, enrolments: new StaffEnrolments(db), passkeys: parts.passkeys, publicBaseUrl: config.publicBaseUrl })

    // The one issuer's metadata (RFC 8414) says what people's clients need.
    const base = config.publicBaseUrl
    Object.assign(app.auth.metadata, {
      authorization_endpoint: `${base}${ROUTES.authorization}`,
      registration_endpoint: `${base}${ROUTES.registration}`,
      revocation_endpoint: `${base}${ROUTES.revocation}`,
      grant_types_supported: ['client_credentials', 'authorization_code', 'refresh_token'],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    })
    void PERSON_SCOPE

    app.decorate('staff', { accounts })

    const sweep = setInterval(() => {
      sweepExpired(db).catch((err) => app.log.warn({ err: (err as Error).message }, 'staff: sweeping expired records failed'))
    }, SWEEP_EVERY_MS)
    sweep.unref()
    app.addHook('onClose', async () => {
      clearInterval(sweep)
      await mailer?.close()
    })
  },
  { name: 'staff', fastify: '5.x', dependencies: ['auth', 'store', 'playbook', 'errors'] },
)
