// Fastify's own response serializer (@fastify/fast-json-stringify-compiler, the factory Fastify
// installs when given none), each schema compiled once per process. Fastify compiles a
// serializer for every response schema of every route when an app starts; a process that builds
// several apps (a test file builds up to twenty) compiled the same schemas each time: 27 ms of
// an app's 330 ms of CPU to build (profiled: test/app/token.test.ts's apps). A server builds one
// app, so for it nothing changes. The compiled function holds no state between calls.
import SerializerSelector from '@fastify/fast-json-stringify-compiler'

const stock = SerializerSelector()
const compiled = new Map<string, SerializerSelector.Serializer>()

/** Fastify's `schemaController.compilersFactory.buildSerializer`: the stock one, remembered by schema. */
export const buildSerializer: SerializerSelector.SerializerFactory = (externalSchemas, options) => {
  const compile = stock(externalSchemas, options)
  // The shared schemas and options a serializer was built with are part of what it is.
  const context = JSON.stringify([externalSchemas, options ?? {}])
  return (route) => {
    const key = `${context}${JSON.stringify(route.schema)}`
    let serialize = compiled.get(key)
    if (!serialize) {
      serialize = compile(route)
      compiled.set(key, serialize)
    }
    return serialize
  }
}
