// `leads purge --before` takes only RFC 3339 with its offset (third audit, finding 11): it took
// 12/31/1999, `0`, "Dec 31 1999", a time without an offset (read as local time) and 1999-02-30
// (rolled over to March 2), because `new Date()` reads them all. Each is refused now (exit 64,
// naming the form) and nothing is erased; a purge prints the instant it uses (UTC) and how many
// leads were received before it, and asks before erasing unless --yes (cron): no answer (cron's
// empty input) erases nothing. `webhooks replay --since` (and `email resend --since`) reads times the same way. On the suite's
// storage (SQLite, or PostgreSQL with DATABASE_URL).
import { spawn } from 'node:child_process'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { type Config, projectRoot } from '../../config.js'
import { LeadsRepository } from '../../features/leads/repository.js'
import { parseRfc3339 } from '../../lib/rfc3339.js'
import { testApp } from '../helpers/app.js'
import { cliBundle } from '../helpers/bundles.js'
import { type Run, run } from '../helpers/cli.js'
import { leadAt } from '../helpers/stored-leads.js'

async function withLeads(t: Parameters<typeof testApp>[0]): Promise<{ app: FastifyInstance; config: Config }> {
  // No retention of the app's own (it would erase these old leads itself).
  const { app, config } = await testApp(t, { leadsRetentionDays: 0, webhookPayloadRetentionDays: 3650 })
  await new LeadsRepository(app.store, []).insertBatch(
    [leadAt('y1999', '1999-06-01T00:00:00.000Z'), leadAt('y2000', '2000-01-01T00:00:00.000Z'), leadAt('y2030', '2030-01-01T00:00:00.000Z')],
    new Map(),
    new Date().toISOString(),
  )
  return { app, config }
}

/** The CLI with this text on its standard input (then closed: what cron gives, when empty). */
function purge(config: Config, args: string[], input: string): Promise<Run> {
  return new Promise((resolve) => {
    const env: Record<string, string | undefined> = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: config.dataDir,
      LOG_LEVEL: 'silent',
    }
    if (config.databaseUrl) env.DATABASE_URL = config.databaseUrl
    const child = spawn(process.execPath, [cliBundle(), 'leads', 'purge', ...args], {
      cwd: projectRoot,
      env,
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => {
      stdout += d
    })
    child.stderr.on('data', (d) => {
      stderr += d
    })
    child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(input)
  })
}

const count = async (app: FastifyInstance) => app.leads.count()

t.test('the form: RFC 3339 date-times with an offset, and nothing else', async (t) => {
  for (const text of [
    '12/31/1999',
    '0',
    'Dec 31 1999',
    '1999-12-31T00:00:00',
    '1999-02-30T00:00:00Z',
    '1999-12-31',
    '1999-12-31T24:00:00Z',
    '1999-12-31T23:59:60Z',
    '1999-12-31T00:00:00+25:00',
    '1999-13-01T00:00:00Z',
    ' 1999-12-31T00:00:00Z',
    '1999-12-31T00:00Z',
    '+001999-12-31T00:00:00Z',
    '1999-12-31T00:00:00 UTC',
    '2000-02-30T00:00:00Z',
    '1900-02-29T00:00:00Z',
  ]) {
    const parsed = parseRfc3339(text)
    t.ok('problem' in parsed, `${JSON.stringify(text)} refused`)
    if ('problem' in parsed) t.match(parsed.problem, /RFC 3339 time with its offset/, 'naming the form')
  }
  const accepted: [string, string][] = [
    ['1999-12-31T00:00:00Z', '1999-12-31T00:00:00.000Z'],
    ['1999-12-31t00:00:00z', '1999-12-31T00:00:00.000Z'],
    ['2000-01-01T02:00:00+02:00', '2000-01-01T00:00:00.000Z'],
    ['1999-12-31T19:00:00.5-05:00', '2000-01-01T00:00:00.500Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
  ]
  for (const [text, iso] of accepted) {
    const parsed = parseRfc3339(text)
    t.equal('instant' in parsed ? parsed.instant.toISOString() : parsed.problem, iso, `${text} is ${iso}`)
  }
})

t.test('purge refuses what is not RFC 3339 with an offset: exit 64, the form named, nothing erased', async (t) => {
  const { app, config } = await withLeads(t)
  for (const before of ['12/31/1999', '0', 'Dec 31 1999', '1999-12-31T00:00:00', '1999-02-30T00:00:00Z']) {
    const res = await run('leads', ['purge', '--before', before, '--yes'], config)
    t.equal(res.code, 64, `--before ${before}: exit 64`)
    t.match(res.stderr, /RFC 3339 time with its offset, YYYY-MM-DDTHH:MM:SS/, 'naming the form')
    t.notMatch(res.stdout, /erased:/)
  }
  t.equal(await count(app), 3, 'nothing was erased')
})

t.test('purge prints the instant and the count, and asks; no answer erases nothing; y or --yes does', async (t) => {
  const { app, config } = await withLeads(t)
  const silent = await purge(config, ['--before', '2000-01-01T02:00:00+02:00'], '')
  t.equal(silent.code, 1, 'no answer (an empty input, as from cron): not confirmed')
  t.match(silent.stdout, /^before: 2000-01-01T00:00:00\.000Z \(2000-01-01T02:00:00\+02:00, in UTC\)$/m, 'the instant used')
  t.match(silent.stdout, /^leads received before it: 1$/m, 'how many')
  t.match(silent.stdout, /erase these 1 leads and every copy of them\? \[y\/N\]/)
  t.match(silent.stderr, /not confirmed, nothing was erased \(--yes purges without asking, as from cron\)/)
  t.equal(await count(app), 3)

  const no = await purge(config, ['--before', '2000-01-01T00:00:00Z'], 'n\n')
  t.equal(no.code, 1)
  t.equal(await count(app), 3, 'n: nothing erased')

  const yes = await purge(config, ['--before', '2000-01-01T00:00:00Z'], 'y\n')
  t.equal(yes.code, 0, yes.stderr)
  t.match(yes.stdout, /^erased: 1$/m)
  t.equal(await count(app), 2, 'y: the lead of 1999 erased')

  const cron = await run('leads', ['purge', '--before', '2031-01-01T00:00:00Z', '--yes'], config)
  t.equal(cron.code, 0, cron.stderr)
  t.match(cron.stdout, /^before: 2031-01-01T00:00:00\.000Z .*\nleads received before it: 2\n(.|\n)*^erased: 2$/m, '--yes: no question')
  t.notMatch(cron.stdout, /\[y\/N\]/)
  t.equal(await count(app), 0)
})

t.test('webhooks replay --since reads times the same way', async (t) => {
  const { config } = await testApp(t)
  const res = await run('webhooks', ['replay', '--since', '12/31/1999'], config)
  t.equal(res.code, 64)
  t.match(res.stderr, /--since "12\/31\/1999" is not an RFC 3339 time with its offset/)
})
