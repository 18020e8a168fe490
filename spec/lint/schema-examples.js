// Spectral function for .spectral.yaml's `schema-examples` rule: every value of a schema's
// JSON Schema `examples` array validates against that schema (the OpenAPI 3.1 form of examples,
// which Spectral's own oas3-valid-schema-example does not read: it checks `example` and
// `default` only). Runs on the resolved document, so `$ref`s and `allOf` are followed.
import { createRulesetFunction } from '@stoplight/spectral-core'
import { schema } from '@stoplight/spectral-functions'

export default createRulesetFunction({ input: { type: 'object' }, options: null }, function schemaExamples(target, _options, context) {
  const { examples, ...own } = target
  if (!Array.isArray(examples)) return []
  return examples.flatMap(
    (example, i) =>
      schema(example, { schema: own, dialect: 'draft2020-12', allErrors: true }, { ...context, path: [...context.path, 'examples', i] }) ??
      [],
  )
})
