import type { Client } from '@modelcontextprotocol/client'
import t, { type Test } from 'tap'
import { errorCodes } from '../../plugins/errors/codes.js'
import { leadOf, tokenFor } from '../helpers/app.js'
import { captureLog, type LogCapture } from '../helpers/log.js'
import { connect, type Live, live, mcpToken, textOf } from '../helpers/mcp.js'
import { needsPostgres, throwawayPostgres } from '../helpers/processes.js'

const consultation = (n: number) => ({ ...leadOf(n), consent: true })

/** The tools that touch storage, called as the studio's agent and as an anonymous prospect. */
async function callStorageTools(studio: Client, anonymous: Client, n: number) {
  return [
    ['recent_leads', await studio.callTool({ name: 'recent_leads', arguments: {} })],
    ['request_consultation (token)', await studio.callTool({ name: 'request_consultation', arguments: consultation(n) })],
    ['request_consultation (anonymous)', await anonymous.callTool({ name: 'request_consultation', arguments: consultation(n + 1) })],
  ] as const
}

/** Each tool answered like the API's 503 at the same moment: same code, message and hint. */
async function checkUnavailable(t: Test, l: Live, studio: Client, anonymous: Client, n: number): Promise<void> {
  const reader = await tokenFor(l.app, ['read:leads']).catch(() => undefined)
  const http = await l.app.inject({ url: '/leads.json', headers: reader ? { authorization: `Bearer ${reader.token}` } : {} })
  for (const [name, result] of await callStorageTools(studio, anonymous, n)) {
    t.equal(result.isError, true, `${name}: a tool error`)
    t.match(result.structuredContent, { code: 'service_unavailable', message: String, hint: String }, `${name}: the API's Error`)
    const error = result.structuredContent as { message: string; hint: string }
    t.equal(textOf(result), `${error.message} Hint: ${error.hint}`, `${name}: the message and what to do, as text`)
    t.match(error.hint, /retry/, `${name}: retry`)
    t.notMatch(textOf(result), errorCodes.internal_error.message, `${name}: not "something went wrong"`)
    if (http.statusCode === 503) t.match(http.json(), error, `${name}: what GET /leads.json answers meanwhile (503)`)
  }
}

/** No stack, no "mcp tool failed" in the log. */
function checkLog(t: Test, log: LogCapture): void {
  const lines = log.lines()
  t.same(
    lines.filter((l) => l.msg === 'mcp tool failed').map((l) => l.tool),
    [],
    'no tool failure logged as a crash',
  )
  t.same(
    lines.filter((l) => Boolean((l.err as { stack?: string } | undefined)?.stack)).map((l) => l.msg),
    [],
    'no stack trace logged',
  )
}

async function liveWithLog(t: Test, overrides: Parameters<typeof live>[1]): Promise<{ l: Live; log: LogCapture }> {
  const log = captureLog()
  const l = await live(t, { logLevel: 'info', ...overrides }, { logger: { level: 'info', stream: log.stream } })
  return { l, log }
}

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
