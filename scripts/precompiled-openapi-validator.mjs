// Kept for its figure (bench/README.md, "The ablation": `npm run bench -- --ablation=precompiled-validator`):
// start-up to the first answered request, against glue's own validator compiled at every start.
//
// The OpenAPI document check, precompiled for the server bundle (scripts/bundle.mjs uses the plugin).
//
// At every start fastify-openapi-glue validates the spec against the
// OpenAPI 3.1 JSON Schema with @seriousme/openapi-schema-validator, which compiles that schema with
// Ajv first: about 120 ms, a tenth of the start-up, spent on the same schema every time. The bundle
// instead carries that validator compiled here, once, with Ajv's standalone code generation from the
// schema file installed in node_modules (the same Ajv class and options the validator uses). The
// spec is still checked at every start, by the same schema, and fastify-openapi-glue sees the same
// Validator class: only its getAjvValidator('3.1') answers with the precompiled function.
// The unbundled server (tsx, dist/server.js) uses the validator as published.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import Ajv2020 from 'ajv/dist/2020.js'
import standaloneCode from 'ajv/dist/standalone/index.js'
import addFormats from 'ajv-formats'

export const VALIDATOR = '@seriousme/openapi-schema-validator'

/** ES module source of the OpenAPI 3.1 document validator, compiled from the installed schema. */
export function oas31ValidatorSource() {
  const require = createRequire(import.meta.url)
  const schemaFile = join(dirname(require.resolve(`${VALIDATOR}/package.json`)), 'schemas', 'v3.1', 'schema.json')
  const schema = JSON.parse(readFileSync(schemaFile, 'utf8'))
  // As the validator's own getAjvValidator does: strict off, ajv-formats, media-range accepted.
  const ajv = new Ajv2020({ strict: false, code: { source: true, esm: true } })
  addFormats(ajv)
  ajv.addFormat('media-range', true)
  return standaloneCode(ajv, ajv.compile(schema))
}

/** fastify-openapi-glue's import of the validator gets a subclass with the precompiled 3.1 check. */
export const precompiledOpenApiValidator = (root) => ({
  name: 'precompiled-openapi-validator',
  setup(b) {
    // Should fastify-openapi-glue stop importing the validator this way, the build says so rather
    // than quietly shipping a bundle that compiles the schema at every start again.
    let replaced = false
    b.onResolve({ filter: /^@seriousme\/openapi-schema-validator$/ }, (args) => {
      if (!args.importer.includes(join('node_modules', 'fastify-openapi-glue'))) return undefined
      replaced = true
      return { path: 'validator', namespace: 'precompiled-openapi' }
    })
    b.onEnd((result) => {
      if (!replaced && result.errors.length === 0) {
        throw new Error(
          `precompiled-openapi-validator: fastify-openapi-glue no longer imports ${VALIDATOR}; update scripts/precompiled-openapi-validator.mjs`,
        )
      }
    })
    b.onResolve({ filter: /^precompiled:oas-3\.1$/ }, () => ({ path: 'oas-3.1', namespace: 'precompiled-openapi' }))
    b.onLoad({ filter: /^oas-3\.1$/, namespace: 'precompiled-openapi' }, () => ({ contents: oas31ValidatorSource(), loader: 'js' }))
    b.onLoad({ filter: /^validator$/, namespace: 'precompiled-openapi' }, () => ({
      resolveDir: root,
      loader: 'js',
      contents: [
        `import { Validator as Published } from '${VALIDATOR}'`,
        `import validate31 from 'precompiled:oas-3.1'`,
        'export class Validator extends Published {',
        "  getAjvValidator(version) { return version === '3.1' ? validate31 : super.getAjvValidator(version) }",
        '}',
      ].join('\n'),
    }))
  },
})
