// Email addresses as the spec stores them: LeadFields.email is `format: email` (ajv-formats: ASCII
// letters, digits and `!#$%&'*+/=?^_`{|}~-` before the @, an ASCII domain), at most 254
// characters. Two spellings of a stored address are the same address exactly when they are equal
// once their ASCII letters are lower-cased: never through Unicode case mapping, which makes the
// Kelvin sign U+212A a `k` and the long s U+017F an `s`, so that a look-alike would match (and an
// erasure act on) someone else's address.
import { compileStrict } from './ajv.js'

/** LeadFields.email's schema (test/email-address.test.ts holds the two together). */
export const EMAIL_SCHEMA = { type: 'string', format: 'email', maxLength: 254 } as const

const validate = compileStrict(EMAIL_SCHEMA)

/** Is this an address the spec lets a lead have? */
export const isEmailAddress = (value: unknown): boolean => validate(value)

/** An address as it is compared: its ASCII letters lower-cased, nothing else changed. */
export const canonicalEmail = (email: string): string => email.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())

/**
 * Why `text` is no address a lead can have, naming the first character outside ASCII (the
 * look-alike, if one is the cause), or undefined when it is one.
 */
export function emailAddressProblem(text: string): string | undefined {
  if (isEmailAddress(text)) return undefined
  const odd = [...text].findIndex((ch) => (ch.codePointAt(0) ?? 0) > 0x7e)
  if (odd < 0) return `${JSON.stringify(text)} is not an email address (the spec's LeadFields.email), so no lead has it`
  const ch = [...text][odd] as string
  const code = `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
  return `${JSON.stringify(text)} is not an email address a lead can have: the character at position ${odd + 1} is ${code}, not ASCII (stored addresses are ASCII, matched with ASCII letters in either case; a look-alike matches nothing)`
}
