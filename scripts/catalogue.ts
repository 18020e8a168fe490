// Publish the studio's catalogue (data/projects.json by default) into the configured storage.
// Running servers pick up the new version within CATALOGUE_REFRESH_SECONDS.
//
//   npm run catalogue -- import [FILE]    validate against the spec's Project schema, then publish
//   npm run catalogue -- status           the published version
//   npm run catalogue -- unpublish        remove it (getProjects answers 404)

import { loadConfig } from '../config.js'
import { catalogueFile, publishCatalogue, readCatalogueFile } from '../plugins/catalogue.js'
import { openStore } from '../plugins/store/open.js'

async function main([command, file]: string[]): Promise<number> {
  const config = loadConfig()
  if (command !== 'import' && command !== 'status' && command !== 'unpublish') {
    process.stderr.write('usage: npm run catalogue -- import [FILE] | status | unpublish\n')
    return 2
  }
  const store = await openStore(config)
  try {
    if (command === 'import') {
      const projects = readCatalogueFile(file ?? catalogueFile)
      const etag = await publishCatalogue(store, projects)
      process.stdout.write(`published ${projects.length} projects (etag ${etag})\n`)
    } else if (command === 'unpublish') {
      await store.catalogue.publish([], new Date().toISOString())
      process.stdout.write('catalogue unpublished\n')
    } else {
      const current = await store.catalogue.current()
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

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`catalogue: ${err.message}\n`)
    process.exit(1)
  },
)
