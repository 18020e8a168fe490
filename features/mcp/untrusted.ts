// Text that came from outside (leads' names and notes, typed by anyone; arguments echoed back) as
// the agents read it: only inside JSON strings, with every character that could start a line of
// its own, reorder what is shown or hide text escaped as \uXXXX, so that no value can pass for a
// line of the tool's own text, an instruction to the agent or a hidden message. Leads stored
// before intake stripped such characters are shown just as safely.

/**
 * Control characters (C0, DEL, C1 such as NEL), format characters (bidi overrides and isolates,
 * zero-width characters, the BOM, Unicode tags), line and paragraph separators, variation selectors.
 */
const HIDDEN = /\p{Cc}|\p{Cf}|\p{Zl}|\p{Zp}|\p{Variation_Selector}/gu

const escaped = (ch: string): string =>
  Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')

/** Text with every hidden or line-breaking character shown as its \uXXXX escape. */
export function visible(text: string): string {
  return text.replace(HIDDEN, escaped)
}

/** A value as one line of JSON (JSON.parse gives it back unchanged), nothing in it hidden. */
export function jsonLine(value: unknown): string {
  return visible(JSON.stringify(value) ?? 'null')
}
