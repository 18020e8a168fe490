// Whether a client is still active, read from storage at most once per TTL per client, so a
// revocation (made by the CLI or another instance) stops its tokens within the TTL (≤ 60 s).
export class ClientStatusCache {
  private readonly entries = new Map<string, { active: boolean; at: number }>()

  constructor(
    private readonly lookup: (clientId: string) => Promise<boolean>,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async isActive(clientId: string): Promise<boolean> {
    const t = this.now()
    const hit = this.entries.get(clientId)
    if (hit && t - hit.at < this.ttlMs) return hit.active
    const active = await this.lookup(clientId)
    this.entries.set(clientId, { active, at: t })
    return active
  }

  forget(clientId: string): void {
    this.entries.delete(clientId)
  }
}
