// Email to the studio on real server processes, with a real SMTP server (smtp-server, every
// message parsed with mailparser): kill -9 during a flood of 1,000 leads, then a restart: every
// acknowledged lead's email arrives (its lead id in the Message-ID), none for a lead that was
// not stored; on SQLite and on PostgreSQL (a throwaway server).
import t, { type Test } from 'tap'
import { readLog, submitMany } from '../helpers/flood.js'
import { testdir } from '../helpers/folders.js'
import { needsPostgres, type ServerProcess, sharedSecrets, startServer, throwawayPostgres, tokenFrom } from '../helpers/processes.js'
import { leadIdOf, smtpServer } from '../helpers/smtp.js'

// A restart after kill -9 waits for the dead instance's lease on the email endpoint to lapse
// (20 s), on top of the flood and a throwaway PostgreSQL.
t.setTimeout(360_000)

const HOST = 'api.studio.test'

async function killDuringFlood(t: Test, env: Record<string, string>): Promise<void> {
  const smtp = await smtpServer(t)
  const secrets = sharedSecrets()
  const base = {
    ...secrets,
    ...env,
    RATE_LIMITS: 'submitLead=1000000, getLeads=1000000, issueToken=1000000',
    SMTP_URL: smtp.url,
    LEAD_EMAIL_TO: 'studio@example.com',
    PUBLIC_HOST: HOST,
    WEBHOOKS_FIRST_RETRY_MS: '200',
  }
  let server: ServerProcess = await startServer(t, base)
  const token = await tokenFrom(server.url, secrets.BOOTSTRAP_CLIENT_ID, secrets.BOOTSTRAP_CLIENT_SECRET)
  let killed: Promise<void> | undefined
  const outcome = await submitMany(server.url, token, 1000, 100, (count) => {
    if (count === 300 && !killed) killed = server.kill9()
  })
  await killed
  t.ok(outcome.acked.size >= 300, `${outcome.acked.size} leads acknowledged before the kill`)
  t.ok(outcome.acked.size < 1000, 'the kill interrupted the submissions')
  t.comment(`${smtp.messages.length} emails before the kill`)

  server = await startServer(t, { ...base, PORT: String(server.port) })
  const stored = new Map((await readLog(server.url, token)).map((l) => [l.id, l]))
  // Every stored lead (acknowledged, or committed just before the kill) is emailed.
  await smtp.waitFor((m) => new Set(m.map(leadIdOf)).size >= stored.size, 180_000)
  const emailed = new Set(smtp.messages.map(leadIdOf))
  t.same(
    [...outcome.acked.keys()].filter((id) => !emailed.has(id)),
    [],
    `every acknowledged lead (${outcome.acked.size}) emailed at least once`,
  )
  t.same(
    [...emailed].filter((id) => !stored.has(id as string)),
    [],
    'no email for a lead that was not stored',
  )
  t.equal(emailed.size, stored.size, 'every stored lead emailed')
  t.same(
    smtp.messages
      .filter((m) => {
        const lead = stored.get(leadIdOf(m) as string)
        return m.parsed.messageId !== `<${lead?.id}@${HOST}>` || m.parsed.replyTo?.value[0]?.address !== lead?.email
      })
      .map((m) => m.parsed.messageId),
    [],
    "each email is its lead's: Message-ID from the lead id, Reply-To the prospect",
  )
  t.comment(`${smtp.messages.length} emails of ${emailed.size} leads (${smtp.messages.length - emailed.size} sent twice, same Message-ID)`)
  t.equal(await server.stop(), 0)
}

t.test('kill -9 during a 1,000-lead flood, then restart: every acknowledged lead emailed: SQLite', async (t) => {
  await killDuringFlood(t, { DATA_DIR: `${testdir(t, { data: {} })}/data` })
})

t.test('kill -9 during a 1,000-lead flood, then restart: every acknowledged lead emailed: PostgreSQL', async (t) => {
  if (!needsPostgres(t)) return
  const pg = await throwawayPostgres(t)
  await killDuringFlood(t, { DATA_DIR: `${testdir(t, { data: {} })}/data`, DATABASE_URL: pg.url })
})
