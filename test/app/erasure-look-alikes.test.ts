// Access and erasure requests for look-alike addresses (third audit, finding 3): `erase --email`
// written with the Kelvin sign U+212A erased kate@example.com's lead, because JavaScript
// lower-cases U+212A to `k`. Addresses are matched as the spec stores them (ASCII, ASCII letters in
// either case), never through Unicode case mapping: a look-alike is refused, naming the
// character, and acts on nobody. On the suite's storage (SQLite, or PostgreSQL).
import t from 'tap'
import { NotAnAddress, Privacy } from '../../features/privacy/privacy.js'
import { emailHash } from '../../features/privacy/repository.js'
import { EMAIL_SCHEMA } from '../../lib/email-address.js'
import { loadPepper } from '../../plugins/auth/secrets.js'
import { call, leadOf, spec, testApp, tokenFor } from '../helpers/app.js'

const SUBMIT = '/scripts/enquiry_backend.php'

/** Spellings that Unicode case mapping, NFKC or a reader's eye takes for an ASCII address of a lead below. */
const LOOK_ALIKES: [string, string][] = [
  ['\u212Aate@example.com', 'U+212A'], // KELVIN SIGN: lower-cases to k
  ['\u212AATE@EXAMPLE.COM', 'U+212A'],
  ['\u017Fam@example.com', 'U+017F'], // LATIN SMALL LETTER LONG S: upper-cases to S
  ['\u0130van@example.com', 'U+0130'], // LATIN CAPITAL LETTER I WITH DOT ABOVE: lower-cases to i + U+0307
  ['\u0131van@example.com', 'U+0131'], // LATIN SMALL LETTER DOTLESS I: upper-cases to I
  ['\uFF4Bate@example.com', 'U+FF4B'], // FULLWIDTH LATIN SMALL LETTER K: NFKC makes it k
  ['\u043Aate@example.com', 'U+043A'], // CYRILLIC SMALL LETTER KA
  ['kate@example.co\u1E3F', 'U+1E3F'],
  ['kate\u200B@example.com', 'U+200B'], // a zero-width space inside
]

t.test('the address rule is the spec’s: LeadFields.email is what lib/email-address.ts holds addresses to', async (t) => {
  const email = (spec.schema('LeadFields').properties as Record<string, Record<string, unknown>>).email ?? {}
  for (const [key, value] of Object.entries(EMAIL_SCHEMA)) t.equal(email[key], value, `LeadFields.email's ${key}`)
})

t.test('export and erase of a look-alike address: refused, naming the character; nobody’s lead touched', async (t) => {
  const { app, config } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads', 'read:leads'])
  const auth = { authorization: `Bearer ${token}` }
  const stored: Record<string, string> = {}
  for (const [n, email] of ['kate@example.com', 'sam@example.com', 'Ivan@example.com', 'KATE.SMITH@EXAMPLE.COM'].entries()) {
    const res = await call(t, app, { method: 'POST', url: SUBMIT, headers: auth, payload: { ...leadOf(n), email } })
    t.equal(res.statusCode, 200)
    stored[email] = res.json().id
  }
  const privacy = new Privacy(app.store, loadPepper(config))

  for (const [address, code] of LOOK_ALIKES) {
    await t.rejects(privacy.exportEmail(address), NotAnAddress, `export ${JSON.stringify(address)} refused`)
    await t.rejects(
      privacy.eraseEmail(address),
      new RegExp(`${code.replace('+', '\\+')}.*not ASCII`),
      `erase ${JSON.stringify(address)} refused, naming ${code}`,
    )
    // Below the request's check too, the match itself is exact: no lead has the look-alike.
    t.same(await privacy.repo.leadsByEmail(address), [], `no lead matches ${JSON.stringify(address)} in storage`)
  }
  t.equal(await app.leads.count(), 4, 'every lead is still there')
  t.not(emailHash('key', '\u212Aate@example.com'), emailHash('key', 'kate@example.com'), 'the erasure record’s hash tells them apart')

  // ASCII letters in either case, and the spaces intake would drop, are the same address.
  const found = async (address: string) => (await privacy.exportEmail(address)).leads.map((l) => l.id)
  t.same(await found('KATE@example.COM'), [stored['kate@example.com']], 'ASCII case does not matter')
  t.same(await found('  ivan@EXAMPLE.com '), [stored['Ivan@example.com']], 'nor surrounding spaces; I is i (never a dotless ı)')
  t.same(await found('kate.smith@example.com'), [stored['KATE.SMITH@EXAMPLE.COM']])
  t.same(await privacy.eraseEmail('KATE@EXAMPLE.COM'), [stored['kate@example.com']], 'erasing the ASCII spelling erases the lead')
  t.same(
    (await privacy.exportEmail('kate@example.com')).erased.map((e) => e.lead_id),
    [stored['kate@example.com']],
    'and the erasure is found under either case',
  )
  t.equal(await app.leads.count(), 3, 'only that lead was erased')
})
