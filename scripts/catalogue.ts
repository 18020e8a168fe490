// `studio catalogue`: publish the studio's catalogue (data/projects.json by default) into the
// configured storage. Running servers pick up the new version within CATALOGUE_REFRESH_SECONDS.
//
//   npx studio catalogue import [FILE]    validate against the spec's Project schema, then publish
//   npx studio catalogue status           the published version
//   npx studio catalogue unpublish        remove it (getProjects answers 404)
import type { Command } from 'commander'
import { loadConfig } from '../config.js'
import { catalogueFile, readCatalogueFile } from '../features/catalogue/file.js'
import { CatalogueRepository } from '../features/catalogue/repository.js'
import { Spec } from '../plugins/spec/document.js'
import { loadSpec } from '../plugins/spec/load.js'
import { act, command, newDatabaseOption, subcommand } from './cli.js'
import { openServerStore } from './data.js'

/** The catalogue repository on the configured storage, closed after `fn`. */
async function withCatalogue(cmd: Command, fn: (catalogue: CatalogueRepository) => Promise<void>): Promise<number> {
  const store = await openServerStore(loadConfig(), cmd.optsWithGlobals().newDatabase === true)
  try {
    await fn(new CatalogueRepository(store.db, store.dialect))
    return 0
  } finally {
    await store.close()
  }
}

export function catalogueCommand(): Command {
  const catalogue = command('catalogue', "the studio's published catalogue of projects", 'publish the catalogue of projects').addOption(
    newDatabaseOption(),
  )

  subcommand(catalogue, 'import', "validate FILE against the spec's Project schema, then publish it (a bad file changes nothing)")
    .argument('[file]', 'the catalogue', catalogueFile)
    .action(
      act((file: string, _opts: object, cmd: Command) => {
        // Validated before the storage is touched.
        const projects = readCatalogueFile(new Spec(loadSpec()), file)
        return withCatalogue(cmd, async (repo) => {
          const etag = await repo.publish(projects, new Date().toISOString())
          process.stdout.write(`published ${projects.length} projects (etag ${etag})\n`)
        })
      }),
    )

  subcommand(catalogue, 'status', 'the published version').action(
    act((_opts: object, cmd: Command) =>
      withCatalogue(cmd, async (repo) => {
        const current = await repo.current()
        process.stdout.write(
          current
            ? `published ${current.projects.length} projects at ${current.published_at} (etag ${current.etag})\n`
            : 'no catalogue published\n',
        )
      }),
    ),
  )

  subcommand(catalogue, 'unpublish', 'remove the published catalogue (getProjects answers 404)').action(
    act((_opts: object, cmd: Command) =>
      withCatalogue(cmd, async (repo) => {
        await repo.publish([], new Date().toISOString())
        process.stdout.write('catalogue unpublished\n')
      }),
    ),
  )
  return catalogue
}
