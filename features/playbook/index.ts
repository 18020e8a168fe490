// The playbook feature: the studio's process, signature styles and name (data/playbook.json),
// validated once at start-up against the spec's Playbook schema (a bad file stops the server
// with the key named) and offered as `app.playbook`.
import { join } from 'node:path'
import fp from 'fastify-plugin'
import { projectRoot } from '../../config.js'
import { compileStrict } from '../../lib/ajv.js'
import type { Spec } from '../../plugins/spec/document.js'
import { dataError } from '../../plugins/validation/messages.js'
import { readUtf8File } from '../../plugins/validation/utf8.js'
import { matchKey } from '../catalogue/names.js'
import type { Playbook } from './view-types.js'

declare module 'fastify' {
  interface FastifyInstance {
    playbook: Playbook
  }
}

export const playbookFile = join(projectRoot, 'data', 'playbook.json')

/** Validates a playbook document; throws an Error naming the key. */
export function parsePlaybook(spec: Spec, json: unknown): Playbook {
  const validate = compileStrict(spec.schema('Playbook'))
  if (!validate(json)) throw dataError('playbook', validate.errors ?? [])
  const playbook = json as Playbook
  // What JSON Schema cannot say: ranges in order, style names distinct as people type them.
  playbook.phases.forEach((p, i) => {
    if (p.duration_weeks.max < p.duration_weeks.min) throw new Error(`playbook: "phases[${i}].duration_weeks.max" must be >= min`)
  })
  const seen = new Set<string>()
  playbook.styles.forEach((s, i) => {
    if (seen.has(matchKey(s.name))) throw new Error(`playbook: "styles[${i}].name" duplicates another style`)
    seen.add(matchKey(s.name))
  })
  return playbook
}

export function loadPlaybook(spec: Spec, file: string = playbookFile): Playbook {
  let json: unknown
  try {
    json = JSON.parse(readUtf8File(file))
  } catch (err) {
    throw new Error(`playbook: cannot read ${file}: ${(err as Error).message}`)
  }
  return parsePlaybook(spec, json)
}

export default fp(
  async (app) => {
    app.decorate('playbook', loadPlaybook(app.spec))
  },
  { name: 'playbook', fastify: '5.x', dependencies: ['spec'] },
)
