// What a browser asks of a host before anything else: `/`, sent on to the API reference (/docs),
// and `/favicon.ico`, the studio's icon. A program asking `/` for JSON still gets the 404 Error
// body: the API has no resource there (paths carry no version segment, and the spec lists none).
import { deflateSync } from 'node:zlib'
import fp from 'fastify-plugin'
import { notFound } from '../errors/answer.js'
import { wantsHtml } from '../errors/html.js'

/** Where a browser lands: the reference, with the getting-started guide at its top. */
export const HOME = '/docs'

// --- the icon: a 32×32 PNG drawn here (no image file, no dependency) ---------------------

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (bytes: Buffer): number => {
  let c = 0xffffffff
  for (const b of bytes) c = (crcTable[(c ^ b) & 0xff] as number) ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

/**
 * The studio's accent colour in a rounded square with a pale band across its lower third (the
 * project pages' palette), as a PNG.
 */
export function iconPng(size = 32): Buffer {
  const accent = [0x8e, 0x5f, 0x3c]
  const pale = [0xf3, 0xed, 0xe4]
  const radius = size / 5
  const rows: Buffer[] = []
  for (let y = 0; y < size; y++) {
    const row = Buffer.alloc(1 + size * 4) // filter byte 0, then RGBA
    for (let x = 0; x < size; x++) {
      // Outside the rounded corners: transparent.
      const dx = Math.max(radius - x - 0.5, x + 0.5 - (size - radius), 0)
      const dy = Math.max(radius - y - 0.5, y + 0.5 - (size - radius), 0)
      const inside = dx * dx + dy * dy <= radius * radius
      const band = y >= Math.round(size * 0.62) && y < Math.round(size * 0.72) && x >= size * 0.22 && x < size * 0.78
      const [r, g, b] = band ? pale : accent
      row.set([r as number, g as number, b as number, inside ? 255 : 0], 1 + x * 4)
    }
    rows.push(row)
  }
  const header = Buffer.alloc(13)
  header.writeUInt32BE(size, 0)
  header.writeUInt32BE(size, 4)
  header.set([8, 6, 0, 0, 0], 8) // 8-bit RGBA, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(rows))),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

export default fp(
  async (app) => {
    const icon = iconPng()
    app.get('/', async (request, reply) => {
      if (wantsHtml(request)) return reply.redirect(HOME, 302)
      throw notFound('/')
    })
    // Browsers sniff the bytes: a PNG at /favicon.ico is shown like an ICO.
    app.get('/favicon.ico', async (_request, reply) => reply.type('image/png').header('cache-control', 'public, max-age=86400').send(icon))
  },
  { name: 'home', fastify: '5.x', dependencies: ['errors'] },
)
