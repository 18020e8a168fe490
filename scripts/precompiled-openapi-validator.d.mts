import type { Plugin } from 'esbuild'
export const VALIDATOR: string
/** ES module source of the OpenAPI 3.1 document validator, compiled from the installed schema. */
export function oas31ValidatorSource(): string
/** esbuild plugin: fastify-openapi-glue's Validator, with the precompiled 3.1 check. */
export function precompiledOpenApiValidator(root: string): Plugin
