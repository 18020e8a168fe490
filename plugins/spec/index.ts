// The spec plugin: the one OpenAPI document this app was built with (`app.spec`), read once by
// app.ts and handed to every plugin from here, so an app built on a variant of the spec uses the
// variant everywhere.
import fp from 'fastify-plugin'
import type { Spec } from './document.js'

declare module 'fastify' {
  interface FastifyInstance {
    spec: Spec
  }
}

export default fp<{ spec: Spec }>(
  async (app, { spec }) => {
    app.decorate('spec', spec)
  },
  { name: 'spec', fastify: '5.x' },
)

export { Spec } from './document.js'
