// `studio webhooks add` says at once when the servers delivering from the storage would hold the
// new endpoint back (they run without WEBHOOKS_ALLOW_PRIVATE), from the instances they record
// (features/webhooks/instances.ts); silent when they would deliver to it.
import t from 'tap'
import { testApp } from '../helpers/app.js'
import { run } from '../helpers/cli.js'

const ALLOW = { WEBHOOKS_ALLOW_PRIVATE: 'true' }
const HELD = /warning: 1 of the 1 server\(s\) delivering from this storage run without WEBHOOKS_ALLOW_PRIVATE=true \(.+\): they hold/

t.test('an http:// endpoint added while the server runs without WEBHOOKS_ALLOW_PRIVATE: a warning at once', async (t) => {
  const { app, config } = await testApp(t, { webhooksAllowPrivate: false })
  await app.ready()
  const added = await run('webhooks', ['add', '--url', 'http://127.0.0.1:9/hook'], config, ALLOW)
  t.equal(added.code, 0, added.stderr)
  t.match(added.stdout, /^endpoint_id: we_/m, 'the endpoint is added (the CLI has the setting)')
  t.match(added.stderr, HELD)

  const https = await run('webhooks', ['add', '--url', 'https://93.184.215.14/hook'], config, ALLOW)
  t.equal(https.code, 0, https.stderr)
  t.notMatch(https.stderr, /warning|note/, 'a public https endpoint is nobody’s to hold: no word')

  await app.close()
  const after = await run('webhooks', ['add', '--url', 'http://127.0.0.1:9/other'], config, ALLOW)
  t.equal(after.code, 0, after.stderr)
  t.notMatch(after.stderr, /warning/, 'the stopped server removed its record')
  t.match(after.stderr, /note: no server delivers from this storage now: start it with WEBHOOKS_ALLOW_PRIVATE=true/)
})

t.test('a server that runs with WEBHOOKS_ALLOW_PRIVATE: no warning', async (t) => {
  const { app, config } = await testApp(t, { webhooksAllowPrivate: true })
  await app.ready()
  const added = await run('webhooks', ['add', '--url', 'http://127.0.0.1:9/hook'], config, ALLOW)
  t.equal(added.code, 0, added.stderr)
  t.notMatch(added.stderr, /warning|note/)
})
