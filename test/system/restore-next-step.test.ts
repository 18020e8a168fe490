// What `studio restore` says to do next (issue 33): start the server on the restored folder (a bare
// `npm start` would start the original one) with the PUBLIC_BASE_URL the backed-up server had, and
// why: the tokens it issued are refused by a server on another PUBLIC_BASE_URL, while the clients'
// credentials still work. The rule is checked too, on the restored folder.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { createConfig, projectRoot } from '../../config.js'
import { basic, startedApp, tokenFor } from '../helpers/app.js'
import { backedUpAndRestored } from '../helpers/cli.js'
import { testdir } from '../helpers/folders.js'

t.test('studio restore names DATA_DIR and the PUBLIC_BASE_URL rule, and the rule holds', async (t) => {
  const { made, restoreOutput, restored } = await backedUpAndRestored(t, testdir(t, {}), { config: {}, env: {} }, (app) =>
    tokenFor(app, ['read:leads']),
  )
  t.match(
    restoreOutput,
    new RegExp(`^next: start the server on it: DATA_DIR=${restored.dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} npm start$`, 'm'),
    'the next step names the restored folder',
  )
  t.match(restoreOutput, /^with the PUBLIC_BASE_URL the backed-up server had: the tokens it issued/m, 'and the PUBLIC_BASE_URL rule')
  t.match(
    restoreOutput,
    /on another PUBLIC_BASE_URL refuses them \(clients then ask for new tokens with their credentials, which still work\)/,
  )

  const read = (app: Awaited<ReturnType<typeof startedApp>>) =>
    app.inject({ url: '/leads.json', headers: { authorization: `Bearer ${made.token}` } })
  const same = await startedApp(t, restored)
  t.equal((await read(same)).statusCode, 200, 'the same PUBLIC_BASE_URL: a token issued before the backup is accepted')
  await same.close()

  const moved = await startedApp(t, createConfig({ ...restored, publicBaseUrl: 'https://api.elsewhere.test' }))
  t.equal((await read(moved)).statusCode, 401, 'another PUBLIC_BASE_URL: refused')
  const renewed = await moved.inject({
    method: 'POST',
    url: '/api/token',
    headers: { authorization: basic(made.clientId, made.secret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=client_credentials',
  })
  t.equal(renewed.statusCode, 200, 'the client asks for a new token with its credentials')
})

t.test('docs/backups.md says the same', async (t) => {
  const doc = readFileSync(join(projectRoot, 'docs', 'backups.md'), 'utf8')
  t.match(doc, /DATA_DIR=NEW npm start/, 'start on the restored folder')
  t.match(doc, /PUBLIC_BASE_URL`?\s+the\s+backed-up\s+server\s+had/, 'the PUBLIC_BASE_URL to start with')
  t.match(doc, /another\s+`?PUBLIC_BASE_URL`?\s+refuses\s+them/, 'and why')
})
