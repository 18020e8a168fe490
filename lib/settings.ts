// The configuration table's building blocks: one environment variable declared once (its name, the
// JSON Schema of its text, default, meaning), the error that names a bad one. config.ts holds the table.
/** One environment variable: how it is written, checked, defaulted and documented. */
export interface Variable<T> {
  readonly env: string
  /** JSON Schema of the value as written in the environment (numbers and booleans are coerced from the text). */
  readonly schema: Record<string, unknown>
  readonly default: T
  /** The default as the README shows it (when it is derived, or not a plain value). */
  readonly shown?: string
  readonly doc: string
  /** What a pattern-checked value should look like, in words (for error messages). */
  readonly expected?: string
  /** Never echo the value in an error message. */
  readonly secret?: boolean
  /** From the validated text to the typed value. */
  readonly parse?: (raw: never) => T
}

export type Opt<T> = Omit<Variable<T>, 'env' | 'schema' | 'default' | 'doc'>

export function string<D extends string | undefined>(
  env: string,
  doc: string,
  opts: Opt<D> & { default: D; pattern?: string; minLength?: number; maxLength?: number },
): Variable<D extends undefined ? string | undefined : string> {
  const { pattern, minLength, maxLength, ...rest } = opts
  return {
    env,
    doc,
    schema: { type: 'string', ...(pattern && { pattern }), ...(minLength && { minLength }), ...(maxLength && { maxLength }) },
    ...rest,
  } as never
}

export function oneOf<const V extends readonly string[]>(env: string, doc: string, values: V, dflt: V[number]): Variable<V[number]> {
  return { env, doc, schema: { type: 'string', enum: values }, default: dflt }
}

export function integer(
  env: string,
  doc: string,
  opts: Opt<number> & { default: number; minimum: number; maximum: number },
): Variable<number> {
  const { minimum, maximum, ...rest } = opts
  return { env, doc, schema: { type: 'integer', minimum, maximum }, ...rest }
}

/** A number that may have a fraction (`0.5`). */
export function decimal(
  env: string,
  doc: string,
  opts: Opt<number> & { default: number; minimum: number; maximum: number },
): Variable<number> {
  const { minimum, maximum, ...rest } = opts
  return { env, doc, schema: { type: 'number', minimum, maximum }, ...rest }
}

export function boolean(env: string, doc: string, dflt: boolean): Variable<boolean> {
  return { env, doc, schema: { type: 'boolean' }, default: dflt }
}

export function parsed<T>(
  env: string,
  doc: string,
  opts: Opt<T> & { default: T; pattern?: string; parse: (raw: string) => T },
): Variable<T> {
  const { pattern, ...rest } = opts
  return { env, doc, schema: { type: 'string', ...(pattern && { pattern }) }, ...rest } as Variable<T>
}

/** Thrown with a message that names the bad variable. */
export class ConfigError extends Error {}

/** The typed value of a variable. */
export type ValueOf<V> = V extends Variable<infer T> ? T : never
