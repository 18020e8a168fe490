// Storage unreachable under the MCP tools that use it (request_consultation, recent_leads): a tool
// error to retry, with the message and hint of the API's 503 service_unavailable (and that Error
// as structured content), logged like the HTTP path (one line, no stack), never "Something went
// wrong". The embedded database's file lost under the server, and PostgreSQL stopped and started.
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/client'
import t, { type Test } from 'tap'
import { errorCodes } from '../../plugins/errors/codes.js'
import { leadOf, tokenFor } from '../helpers/app.js'
import { testdir } from '../helpers/folders.js'
import { captureLog, type LogCapture } from '../helpers/log.js'
import { connect, type Live, live, mcpToken, textOf } from '../helpers/mcp.js'

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
