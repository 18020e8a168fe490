// The naive lead endpoints' one route (bench/baselines/leads.ts on SQLite, leads-pg.ts on
// PostgreSQL): a minimal Fastify app with its own JSON schema for {name, email, phone}; `store`
// commits one lead in its own transaction; 200 with a receipt once it has.
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'

export interface NaiveLead {
  id: string
  name: string
  email: string
  phone: string
  received_at: string
}

type Body = Pick<NaiveLead, 'name' | 'email' | 'phone'>

export function naiveLeadApp(store: (lead: NaiveLead) => unknown): FastifyInstance {
  const app = Fastify({ logger: false })
  app.post<{ Body: Body }>(
    '/leads',
    {
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'email', 'phone'],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 200 },
            email: { type: 'string', format: 'email', maxLength: 254 },
            phone: { type: 'string', minLength: 6, maxLength: 40, pattern: '^(?=(?:\\D*\\d){6})[0-9 +()./-]+$' },
          },
        },
      },
    },
    async (request) => {
      const id = randomUUID()
      const received_at = new Date().toISOString()
      const { name, email, phone } = request.body
      await store({ id, name: name.trim(), email, phone, received_at })
      return { id, received_at, status: 'received' }
    },
  )
  return app
}
