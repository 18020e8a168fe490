// The pricing feature: the model (data/pricing.json), the brief it accepts, and estimates. The
// MCP tools estimate_price and show_pricing_estimator (and through them the estimator view) all
// price through `app.pricing`, so the agent and the view always quote the same figures.
import fp from 'fastify-plugin'
import { compileStrict, type ValidateFunction } from '../../lib/ajv.js'
import { AppError } from '../../plugins/errors/codes.js'
import type { JsonSchema, Spec } from '../../plugins/spec/document.js'
import { validationError } from '../../plugins/validation/messages.js'
import { briefSchema, canonicalBrief, canonicalSchema } from './brief.js'
import { type Estimate, type EstimateInput, estimatePrice, type PricingModel, type PricingOptions, pricingOptions } from './estimate.js'
import { loadPricingModel } from './model.js'

/** A brief the estimator refuses (400 invalid_request wherever it surfaces): the field and what to change. */
export class EstimateError extends AppError {
  constructor(
    readonly field: string,
    override readonly hint: string,
  ) {
    super('invalid_request', `Invalid ${field}: ${hint}`, hint)
    this.name = 'EstimateError'
  }
}

export class Pricing {
  /** The brief's JSON Schema for this model, as advertised (the tools' inputSchema is built from it). */
  readonly briefSchema: JsonSchema
  readonly options: PricingOptions
  private readonly validate: ValidateFunction

  constructor(
    spec: Spec,
    readonly model: PricingModel,
  ) {
    this.briefSchema = briefSchema(spec, model)
    this.options = pricingOptions(model)
    this.validate = compileStrict(canonicalSchema(this.briefSchema, model))
  }

  /** Names made canonical, null as absent: what `estimate` validates. */
  canonical(input: unknown): unknown {
    return canonicalBrief(this.model, input)
  }

  /** Validates and prices a brief; throws EstimateError naming the field. Pure: the input is not modified. */
  estimate(input: unknown): Estimate {
    const brief = this.canonical(input)
    if (!this.validate(brief)) {
      const e = this.validate.errors?.[0]
      const field =
        e?.keyword === 'required'
          ? String(e.params.missingProperty)
          : e?.keyword === 'additionalProperties'
            ? String(e.params.additionalProperty)
            : e?.instancePath.split('/')[1] || 'input'
      throw new EstimateError(field, validationError(this.validate.errors ?? [], 'arguments').hint ?? 'check the brief')
    }
    return estimatePrice(this.model, brief as EstimateInput)
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    pricing: Pricing
  }
}

export default fp(
  async (app) => {
    app.decorate('pricing', new Pricing(app.spec, loadPricingModel(app.spec)))
  },
  { name: 'pricing', fastify: '5.x', dependencies: ['spec'] },
)

export type { Estimate, EstimateInput, PriceRange, PricingModel, PricingOptions } from './estimate.js'
