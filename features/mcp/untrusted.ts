// Text that came from outside (leads' names and notes, typed by anyone; arguments echoed back) as
// the agents read it: only inside JSON strings, with every character that could start a line of
// its own, reorder what is shown or hide text escaped as \uXXXX (lib/text.ts's table), so that no
// value can pass for a line of the tool's own text, an instruction to the agent or a hidden
// message. Leads stored before intake removed such characters are shown just as safely.
import { visible } from '../../lib/text.js'

export { visible }

/** A value as one line of JSON (JSON.parse gives it back unchanged), nothing in it hidden. */
export function jsonLine(value: unknown): string {
  return visible(JSON.stringify(value) ?? 'null')
}
