// Text the server reads must be UTF-8, and what is not is refused where it stops being UTF-8:
// decoding it anyway (Node's 'utf8' does) puts U+FFFD in place of each bad byte, silently. A
// request body (json-body.ts) and the studio's data files (the catalogue, the playbook, the
// pricing model: an editor may save them as Latin-1) are read so.
import { isUtf8 } from 'node:buffer'
import { readFileSync } from 'node:fs'

/** Where the first byte sequence that is not a UTF-8 character starts (its length if there is none). */
function firstInvalidByte(bytes: Uint8Array): number {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let i = 0
  while (i < buffer.length) {
    const lead = buffer[i] ?? 0
    // How many bytes a character beginning with this byte has (0: none begins with it).
    const n = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0
    if (n === 0 || !isUtf8(buffer.subarray(i, i + n))) return i
    i += n
  }
  return buffer.length
}

/** `byte 12 (0xe9)`: the first byte of `bytes` that begins no UTF-8 character. */
export function badByte(bytes: Uint8Array): string {
  const at = firstInvalidByte(bytes)
  return `byte ${at} (0x${(bytes[at] ?? 0).toString(16).padStart(2, '0')})`
}

/** A file's text; throws naming the file and the byte when it is not UTF-8. */
export function readUtf8File(file: string): string {
  const bytes = readFileSync(file)
  if (isUtf8(bytes)) return bytes.toString('utf8')
  throw new Error(`${file} is not UTF-8: ${badByte(bytes)} begins no UTF-8 character; save the file as UTF-8`)
}
