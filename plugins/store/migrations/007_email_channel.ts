// Lead delivery's second channel, and what an operator sees of each endpoint: an endpoint's
// `kind` says how its deliveries go (`webhook`: signed HTTP; `email`: the studio's inbox, a
// built-in endpoint the server keeps from SMTP_URL and LEAD_EMAIL_TO), so an email is a
// delivery row like any other (deleted with its event). The worker keeps each endpoint's
// health: failing since when (its failing turns are served apart from the healthy ones), the
// last failure and when, and when it was last served (turns go round, least recent first).
import type { Kysely, Migration } from 'kysely'

export default (): Migration => ({
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('webhook_endpoints')
      .addColumn('kind', 'text', (c) => c.notNull().defaultTo('webhook'))
      .execute()
    for (const column of ['failing_since', 'last_failure', 'last_failure_at', 'served_at']) {
      await db.schema.alterTable('webhook_endpoints').addColumn(column, 'text').execute()
    }
  },
})
