// Whether a client's token still stands: the client is active, and its secret is still the one
// the token was issued under (the token's generation, counted up by each rotation). A client's
// status is read from storage at most once per TTL, so a revocation or a rotation made by the
// CLI or another instance ends its tokens within the TTL (≤ 60 s) on every instance. A token
// newer than the cached status (issued after a rotation) has the status read again at once, so
// a fresh token works everywhere at once.
export interface ClientStatus {
  active: boolean
  /** The generation of the client's current secret. */
  generation: number
}

export type Standing = 'valid' | 'revoked' | 'rotated'

export class ClientStatusCache {
  private readonly entries = new Map<string, { status: ClientStatus | undefined; at: number }>()

  constructor(
    /** The client's status in storage; undefined for an unknown client. */
    private readonly lookup: (clientId: string) => Promise<ClientStatus | undefined>,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async standing(clientId: string, generation: number): Promise<Standing> {
    const t = this.now()
    let hit = this.entries.get(clientId)
    if (!hit || t - hit.at >= this.ttlMs || (hit.status !== undefined && generation > hit.status.generation)) {
      hit = { status: await this.lookup(clientId), at: t }
      this.entries.set(clientId, hit)
    }
    if (!hit.status?.active) return 'revoked'
    return generation === hit.status.generation ? 'valid' : 'rotated'
  }

  forget(clientId: string): void {
    this.entries.delete(clientId)
  }
}
