// The enrolment link's page (/oauth/enrol/{token}, enrolments.ts): anonymous, so cheap: a token of
// the wrong shape is refused without a lookup, a well-formed one costs one indexed lookup, and
// nothing else runs before it is found usable. Opening the link (GET, HEAD: mail scanners and link
// previews fetch links) uses nothing up; only a verified passkey registration does, atomically
// (two tabs cannot both use it). An unknown, used or expired link, or one whose person was
// removed, gets one answer (410), so the page tells nothing about which. The token never reaches
// the log (the request line shows the route's pattern) nor a Referer (the pages send none).
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Kysely } from 'kysely'
import { AppError } from '../../plugins/errors/codes.js'
import type { Database } from '../../plugins/store/schema.js'
import { enrolPath, type StaffEnrolments } from './enrolments.js'
import { enrolledPage, enrolPage, enrolRefusedPage } from './pages.js'
import { type Passkeys, parseResponse } from './passkeys.js'
import { sendPage as page } from './provider.js'

export interface EnrolParts {
  db: Kysely<Database>
  enrolments: StaffEnrolments
  passkeys: Passkeys
  publicBaseUrl: string
}

/** The ceremony's id for the passkey challenge (passkeys.ts): never an interaction's uid. */
const ceremony = (enrolmentId: string) => `enrol:${enrolmentId}`

const REFUSED_HINT = 'ask the operator for a new link: npm run staff -- enrol --email ADDRESS'
const refused = (reply: FastifyReply) => page(reply, 410, enrolRefusedPage())

type Params = { Params: { token: string } }
/** The token is the person's way in: the request log shows the route's pattern, not the path. */
const config = { secretPath: true }

export function registerEnrolRoutes(app: FastifyInstance, parts: EnrolParts): void {
  const { enrolments, passkeys } = parts

  app.get<Params>('/oauth/enrol/:token', { config }, async (request, reply) => {
    const usable = await enrolments.usable(request.params.token)
    if (!usable) return refused(reply)
    const { staff } = usable
    return page(reply, 200, enrolPage({ action: enrolPath(request.params.token), email: staff.email, name: staff.name }))
  })

  app.get<Params>('/oauth/enrol/:token/passkey-options', { config }, async (request, reply) => {
    const usable = await enrolments.usable(request.params.token)
    reply.header('cache-control', 'no-store')
    if (!usable) throw new AppError('invalid_request', 'This enrolment link cannot be used.', REFUSED_HINT)
    return passkeys.registrationOptions(ceremony(usable.enrolmentId), usable.staff)
  })

  app.post<Params & { Body: { response?: string } }>('/oauth/enrol/:token/passkey', { config }, async (request, reply) => {
    const usable = await enrolments.usable(request.params.token)
    if (!usable) return refused(reply)
    const { staff, enrolmentId } = usable
    const passkey = await passkeys.verifyRegistration(ceremony(enrolmentId), parseResponse(request.body?.response))
    const action = enrolPath(request.params.token)
    if (!passkey) {
      request.log.info({ event: 'staff.passkey_refused', staff_id: staff.id, method: 'enrol' }, 'staff enrolment: passkey refused')
      return page(
        reply,
        400,
        enrolPage({ action, email: staff.email, name: staff.name, message: 'The passkey could not be added. Try again.' }),
      )
    }
    // Used up and the passkey kept together, or neither: another tab that got here first wins.
    const added = await parts.db.transaction().execute(async (trx) => {
      if (!(await enrolments.consume(trx, enrolmentId))) return false
      await passkeys.keep(staff.id, passkey, trx)
      return true
    })
    if (!added) return refused(reply)
    request.log.info({ event: 'staff.passkey_added', staff_id: staff.id, method: 'enrol' }, 'staff enrolment: passkey added')
    return page(reply, 200, enrolledPage(parts.publicBaseUrl))
  })
}
