// Storage unreachable under the MCP tools that use it (request_consultation, recent_leads): a tool
// error to retry, with the message and hint of the API's 503 service_unavailable (and that Error
// as structured content), logged like the HTTP path (one line, no stack), never "Something went
// wrong". The embedded database's file lost under the server, and PostgreSQL stopped and started.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { testdir } from '../helpers/folders.js'
import { connect, mcpToken } from '../helpers/mcp.js'
import { checkLog, checkUnavailable, consultation, liveWithLog } from '../helpers/mcp-unavailable.js'

t.test('the database file lost under the server: the storage tools answer service_unavailable', async (t) => {
  const dataDir = join(testdir(t, {}), 'var')
  const { l, log } = await liveWithLog(t, { dataDir, databaseUrl: undefined })
  const studio = await connect(t, l.base, await mcpToken(l, ['read:leads', 'write:leads']))
  const anonymous = await connect(t, l.base, null)
  t.notOk((await studio.callTool({ name: 'request_consultation', arguments: consultation(1) })).isError, 'before: stored')
  t.notOk((await studio.callTool({ name: 'recent_leads', arguments: {} })).isError, 'before: read')

  rmSync(dataDir, { recursive: true, force: true })
  await checkUnavailable(t, l, studio, anonymous, 2)
  await checkUnavailable(t, l, studio, anonymous, 4)
  checkLog(t, log)
  const said = log.lines().filter((line) => line.level >= 40)
  t.same(
    said.filter((line) => line.tool !== undefined).map((line) => line.msg),
    [],
    'no line per call: the store says once that the file is lost, as for HTTP',
  )
  t.equal(said.filter((line) => /studio\.db was (deleted|replaced)/.test(line.msg)).length, 1, 'the store’s one line about the file')
})
