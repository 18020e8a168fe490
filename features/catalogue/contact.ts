// Whether ENQUIRY_CONTACT tells a visitor how to reach the studio. The project pages show it when
// website enquiries are off; a text with no email, phone number or address leaves a visitor with
// nowhere to write, so the server says so at start (the default text names the variable).

const EMAIL = /[^\s@<>()]+@[^\s@<>()]+\.[A-Za-z]{2,}/
/** Six digits or more, with the separators phone numbers are written with. */
const PHONE = /(?:\d[\s().+/-]*){6,}/
const WEB = /\bhttps?:\/\/\S+|\bwww\.\S+\.\S+/i
/** A postal address: a street word (in a few of the studio's languages) and a number. */
const STREET = /\b(?:street|st|road|rd|avenue|ave|lane|square|place|rue|via|calle|rua|avenida|piazza|strasse|straße|platz|weg)\b/i

export function hasContactDetails(text: string): boolean {
  return EMAIL.test(text) || PHONE.test(text) || WEB.test(text) || (STREET.test(text) && /\d/.test(text))
}
