// Numbers and tables as the bench prints them.

/** A number with `d` decimals; '-' for NaN or infinity. */
export const fmt = (x: number, d = 0): string => (Number.isFinite(x) ? x.toFixed(d) : '-')
/** Microseconds as milliseconds. */
export const ms = (us: number, d = 2): string => fmt(us / 1000, d)

export const MB = 1024 * 1024
/** Bytes as MB, one decimal. */
export const mb = (b: number): number => Math.round((b / MB) * 10) / 10

/** Rows as aligned columns: the first `left` columns padded right, the others left. */
export function columns(rows: string[][], left = 2): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? []
  return rows.map((r) => r.map((c, i) => (i < left ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  '))
}
