// How names given by people (styles, cities, service levels, countries) are matched against the
// studio's data: one rule for every tool and for the pricing estimator.

/** Case, accents, spaces and punctuation do not matter when matching names ("mid century" = "Mid-Century"). */
export function matchKey(s: string): string {
  return s
    .normalize('NFD')
    .replace(/\p{Diacritic}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, '')
}
