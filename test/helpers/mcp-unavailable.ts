// The MCP tools that use storage (request_consultation, recent_leads) while storage is unreachable:
// how they are called and what each must answer and log. Shared by the embedded case
// (test/app/mcp-unavailable.test.ts) and PostgreSQL's (test/system/mcp-unavailable-postgres.test.ts).
import type { Client } from '@modelcontextprotocol/client'
import type { Test } from 'tap'
import { errorCodes } from '../../plugins/errors/codes.js'
import { leadOf, tokenFor } from './app.js'
import { captureLog, type LogCapture } from './log.js'
import { type Live, live, textOf } from './mcp.js'

export const consultation = (n: number) => ({ ...leadOf(n), consent: true })

/** The tools that touch storage, called as the studio's agent and as an anonymous prospect. */
export async function callStorageTools(studio: Client, anonymous: Client, n: number) {
  return [
    ['recent_leads', await studio.callTool({ name: 'recent_leads', arguments: {} })],
    ['request_consultation (token)', await studio.callTool({ name: 'request_consultation', arguments: consultation(n) })],
    ['request_consultation (anonymous)', await anonymous.callTool({ name: 'request_consultation', arguments: consultation(n + 1) })],
  ] as const
}

/** Each tool answered like the API's 503 at the same moment: same code, message and hint. */
export async function checkUnavailable(t: Test, l: Live, studio: Client, anonymous: Client, n: number): Promise<void> {
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
export function checkLog(t: Test, log: LogCapture): void {
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

export async function liveWithLog(t: Test, overrides: Parameters<typeof live>[1]): Promise<{ l: Live; log: LogCapture }> {
  const log = captureLog()
  const l = await live(t, { logLevel: 'info', ...overrides }, { logger: { level: 'info', stream: log.stream } })
  return { l, log }
}
