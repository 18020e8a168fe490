import t from 'tap'
import { connect, mcpToken } from '../helpers/mcp.js'
import { checkLog, checkUnavailable, consultation, liveWithLog } from '../helpers/mcp-unavailable.js'
import { needsPostgres, throwawayPostgres } from '../helpers/processes.js'

t.test('PostgreSQL stopped, then started: service_unavailable meanwhile, one line per call, then served', async (t) => {
  if (!needsPostgres(t)) return
  const pg = await throwawayPostgres(t)
  const { l, log } = await liveWithLog(t, { databaseUrl: pg.url })
  const studio = await connect(t, l.base, await mcpToken(l, ['read:leads', 'write:leads']))
  const anonymous = await connect(t, l.base, null)
  t.notOk((await studio.callTool({ name: 'recent_leads', arguments: {} })).isError, 'before: read')

  await pg.stop()
  await checkUnavailable(t, l, studio, anonymous, 10)
  checkLog(t, log)
  const warnings = log.lines().filter((line) => line.msg === 'storage unavailable' && line.tool !== undefined)
  t.ok(warnings.length >= 3, `each refused call logged in one line (${warnings.length})`)
  t.ok(
    warnings.every((line) => line.level === 40),
    'at warn level, as the HTTP path logs it',
  )

  await pg.start()
  const deadline = Date.now() + 30_000
  let recent = await studio.callTool({ name: 'recent_leads', arguments: {} })
  while (recent.isError && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200))
    recent = await studio.callTool({ name: 'recent_leads', arguments: {} })
  }
  t.notOk(recent.isError, 'served again once PostgreSQL is back, without a restart')
  t.notOk((await studio.callTool({ name: 'request_consultation', arguments: consultation(20) })).isError, 'and stored again')
})
