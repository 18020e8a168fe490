// An instant as an operator writes one for a command (`purge --before`, `resend --since`): RFC 3339's
// date-time only (section 5.6), with its offset, so that what is erased or sent again never depends
// on how JavaScript's Date happens to read a string: `new Date()` takes `12/31/1999`, `0`,
// `Dec 31 1999`, a time without an offset (as local time) and rolls `1999-02-30` over to March 2.

/** The form, for messages. */
export const RFC3339_FORM = 'an RFC 3339 time with its offset, YYYY-MM-DDTHH:MM:SS[.fraction] then Z or ±HH:MM (e.g. 2025-01-01T00:00:00Z)'

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/

/** The instant, or why the text is not one (a sentence naming the form). */
export function parseRfc3339(text: string): { instant: Date } | { problem: string } {
  const m = DATE_TIME.exec(text)
  if (!m) {
    const hint = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(text) ? ' (it has no offset: add Z for UTC, or +HH:MM)' : ''
    return { problem: `${JSON.stringify(text)} is not ${RFC3339_FORM}${hint}` }
  }
  const [, y, mo, d, h, mi, s, , offset] = m as unknown as string[]
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number]
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) {
    return { problem: `${JSON.stringify(text)} is no date: ${y}-${mo} has no day ${d}; write ${RFC3339_FORM}` }
  }
  if (hour > 23 || minute > 59 || second > 59) {
    return { problem: `${JSON.stringify(text)} is no time of day (hours 00-23, minutes and seconds 00-59); write ${RFC3339_FORM}` }
  }
  if (offset && offset.length === 6 && (Number(offset.slice(1, 3)) > 23 || Number(offset.slice(4)) > 59)) {
    return { problem: `${JSON.stringify(text)} has no such offset as ${offset}; write ${RFC3339_FORM}` }
  }
  const instant = new Date(text.toUpperCase())
  if (Number.isNaN(instant.getTime())) return { problem: `${JSON.stringify(text)} is not ${RFC3339_FORM}` }
  return { instant }
}
