// Access and erasure requests for look-alike addresses (third audit, finding 3): `erase --email`
// written with the Kelvin sign U+212A erased kate@example.com's lead, because JavaScript
// lower-cases U+212A to `k`. Addresses are matched as the spec stores them (ASCII, ASCII letters in
// either case), never through Unicode case mapping: a look-alike is refused, naming the
// character, and acts on nobody. On the suite's storage (SQLite, or PostgreSQL).
import t from 'tap'
import { call, leadOf, testApp, tokenFor } from '../helpers/app.js'
import { run } from '../helpers/cli.js'

const SUBMIT = '/scripts/enquiry_backend.php'

t.test('npm run leads: erase and export with the Kelvin sign exit 1 saying why; the lead stays', async (t) => {
  const { app, config } = await testApp(t)
  const { token } = await tokenFor(app, ['write:leads'])
  const res = await call(t, app, {
    method: 'POST',
    url: SUBMIT,
    headers: { authorization: `Bearer ${token}` },
    payload: { ...leadOf(1), email: 'kate@example.com' },
  })
  t.equal(res.statusCode, 200)
  for (const command of ['erase', 'export']) {
    const r = await run('leads', [command, '--email', '\u212Aate@example.com'], config)
    t.equal(r.code, 1, `${command}: exit 1`)
    t.match(r.stderr, /U\+212A, not ASCII/, `${command}: names the character`)
    t.notMatch(r.stdout, /kate@example\.com|erased: [1-9]/, `${command}: prints no lead`)
  }
  t.equal(await app.leads.count(), 1, 'the lead of kate@example.com is still there')
})
