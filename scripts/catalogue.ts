// Publish the studio's catalogue (data/projects.json by default) into the configured storage.
// Running servers pick up the new version within CATALOGUE_REFRESH_SECONDS.
//
//   npm run catalogue -- import [FILE]    validate against the spec's Project schema, then publish
//   npm run catalogue -- status           the published version
//   npm run catalogue -- unpublish        remove it (getProjects answers 404)
//   --new-database                        create the database if the data folder has none

import { parseArgs } from 'node:util'
import { loadConfig } from '../config.js'
import { catalogueFile, readCatalogueFile } from '../features/catalogue/file.js'
import { CatalogueRepository } from '../features/catalogue/repository.js'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import { commandLine, runCli, UsageError } from './cli.js'
import { NEW_DATABASE_USAGE, openServerStore } from './data.js'

const usage = `usage: npm run catalogue -- import [FILE] | status | unpublish [--new-database]\n  ${NEW_DATABASE_USAGE}`

async function main(argv: string[]): Promise<number> {
  const parsed = commandLine(() => parseArgs({ args: argv, allowPositionals: true, options: { 'new-database': { type: 'boolean' } } }))
  const [command, file] = parsed.positionals
  if (command !== 'import' && command !== 'status' && command !== 'unpublish') {
    throw new UsageError(command ? `unknown command ${command}` : 'no command given')
  }
  const config = loadConfig()
  // Validate before touching storage: a bad file changes nothing.
  const projects = command === 'import' ? readCatalogueFile(new Spec(loadSpec()), file ?? catalogueFile) : []
  const store = await openServerStore(config, parsed.values['new-database'] === true)
  const catalogue = new CatalogueRepository(store.db, store.dialect)
  try {
    if (command === 'import') {
      const etag = await catalogue.publish(projects, new Date().toISOString())
      process.stdout.write(`published ${projects.length} projects (etag ${etag})\n`)
    } else if (command === 'unpublish') {
      await catalogue.publish([], new Date().toISOString())
      process.stdout.write('catalogue unpublished\n')
    } else {
      const current = await catalogue.current()
      process.stdout.write(
        current
          ? `published ${current.projects.length} projects at ${current.published_at} (etag ${current.etag})\n`
          : 'no catalogue published\n',
      )
    }
    return 0
  } finally {
    await store.close()
  }
}

runCli('catalogue', usage, main)
