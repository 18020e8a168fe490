// Text from outside (what a prospect types, what a caller sends): the one table of what is
// removed, what becomes a space or a line break, and what is escaped where an agent reads it.
// Lead intake stores text cleaned by it (cleanLine, cleanText), the lead email cleans again what
// it shows (leads stored before a character joined the table are shown as safely), the MCP texts
// escape what stays invisible (visible), and the 404 page shows a path through it.
//
// | characters                                              | stored and shown        | read by an agent |
// |---------------------------------------------------------|-------------------------|------------------|
// | line breaks: CR LF, LF, CR, VT, FF, NEL, LS, PS         | a space (line); \n (text) | \uXXXX         |
// | tab, other white space (\p{White_Space})                | a space (line); kept (text) | kept         |
// | controls (\p{Cc}) other than the above                  | removed                 | \uXXXX           |
// | format characters (\p{Cf}): bidi marks, embeddings,     | removed                 | \uXXXX           |
// |   overrides, isolates, ZWSP, word joiner, BOM, soft     |                         |                  |
// |   hyphen, invisible operators, Unicode tags…            |                         |                  |
// | other default-ignorable code points (Hangul fillers…)   | removed                 | \uXXXX           |
// | lone surrogates (no character: RFC 8259 §8.2)           | removed                 | \uXXXX           |
// | ZWNJ U+200C, ZWJ U+200D, variation selectors            | kept                    | \uXXXX           |
//
// ZWNJ, ZWJ and the variation selectors are kept in stored text because Persian and Indic names,
// emoji sequences and CJK glyph choices need them; an agent still sees each of them escaped, as
// it sees everything it could not see otherwise.

/** Line breaks, every spelling Unicode has (UAX #14's mandatory breaks). */
const LINE_BREAK = /\r\n|[\n\v\f\r\u0085\u2028\u2029]/gu

/** Removed from stored text: see the table above. */
export const REMOVED = /(?![\t\n\v\f\r\u0085\u200C\u200D])(?!\p{Variation_Selector})[\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}]/gu

/** Escaped where an agent reads text: every character that is not seen, or that starts a line. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Variation_Selector}]/gu

const WHITE_SPACE_RUN = /\p{White_Space}+/gu

/** Text on one line, as stored and shown: removed characters gone, every run of white space (line breaks too) one space, trimmed. */
export function cleanLine(value: string): string {
  return value.replace(REMOVED, '').replace(WHITE_SPACE_RUN, ' ').trim()
}

/** Text of several lines, as stored and shown: removed characters gone, every line break `\n`, trimmed. */
export function cleanText(value: string): string {
  return value.replace(REMOVED, '').replace(LINE_BREAK, '\n').trim()
}

/** One UTF-16 code unit as a JSON/JavaScript escape. */
const escaped = (ch: string): string =>
  Array.from({ length: ch.length }, (_, i) => `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`).join('')

/** Text with every hidden or line-breaking character shown as its \uXXXX escape (what an agent reads). */
export function visible(text: string): string {
  return text.replace(HIDDEN, escaped)
}
