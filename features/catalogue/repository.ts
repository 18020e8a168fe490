// The published project catalogue: replaced whole, in one transaction, so a reader sees
// either the old catalogue or the new one, never a mix. Publishes take turns (store/turns.ts):
// two at once (instances seeding a new database together, two operators) would otherwise each
// delete what they see and insert, and the second fail on the first's rows (PostgreSQL).
import { createHash } from 'node:crypto'
import type { Kysely } from 'kysely'
import type { Dialect } from '../../plugins/store/migrations.js'
import type { Database } from '../../plugins/store/schema.js'
import { takeTurn } from '../../plugins/store/turns.js'

export interface PublishedCatalogue {
  etag: string
  published_at: string
  /** Project records in catalogue order. */
  projects: unknown[]
}

export class CatalogueRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  /** The current version's tag, without reading the projects (cheap to poll). */
  async currentEtag(): Promise<string | undefined> {
    const row = await this.db.selectFrom('catalogue').select('etag').where('id', '=', 1).executeTakeFirst()
    return row?.etag
  }

  async current(): Promise<PublishedCatalogue | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const meta = await trx.selectFrom('catalogue').selectAll().where('id', '=', 1).executeTakeFirst()
      if (!meta) return undefined
      const rows = await trx.selectFrom('projects').select('doc').orderBy('position').execute()
      return { etag: meta.etag, published_at: meta.published_at, projects: rows.map((r) => JSON.parse(r.doc)) }
    })
  }

  /** Publishes a new catalogue (an empty list unpublishes it). Returns the new etag. */
  async publish(projects: { id: string }[], at: string): Promise<string | undefined> {
    const docs = projects.map((p) => JSON.stringify(p))
    const etag = createHash('sha256')
      .update(`[${docs.join(',')}]`)
      .digest('base64url')
      .slice(0, 27)
    await this.db.transaction().execute(async (trx) => {
      await takeTurn(trx, this.dialect, 'catalogue')
      await trx.deleteFrom('projects').execute()
      await trx.deleteFrom('catalogue').execute()
      if (projects.length === 0) return
      await trx
        .insertInto('projects')
        .values(projects.map((p, i) => ({ id: p.id, position: i, doc: docs[i] ?? '{}' })))
        .execute()
      await trx.insertInto('catalogue').values({ id: 1, etag, published_at: at }).execute()
    })
    return projects.length > 0 ? etag : undefined
  }
}
