// What operation handlers and MCP tools are given: the app's services, not Fastify. app.ts builds
// it once, from the feature plugins, and hands it to the routes and MCP plugins.
import type { Config } from '../config.js'
import type { Catalogue } from '../features/catalogue/index.js'
import type { Leads } from '../features/leads/index.js'
import type { Playbook } from '../features/playbook/view.js'
import type { Pricing } from '../features/pricing/index.js'
import type { FailureGuard } from '../plugins/auth/failures.js'
import type { Auth } from '../plugins/auth/index.js'
import type { Spec } from '../plugins/spec/document.js'

export interface Deps {
  config: Config
  spec: Spec
  auth: Auth
  authFailures: FailureGuard
  catalogue: Catalogue
  leads: Leads
  pricing: Pricing
  playbook: Playbook
}
