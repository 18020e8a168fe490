// The one HTML escaper (escape-html, Express's): `& < > " '` as character references, so a value
// is text wherever it lands in a page, in an element or in a quoted attribute. Every page the
// server writes (the catalogue's, the 404 page, the docs' banner, the lead email's HTML part)
// escapes with it.
import escapeHtml from 'escape-html'

export { escapeHtml }
