/**
 * The last `limit` distinct keys of a KV key listing, newest last, holding no more than `limit` at once.
 * A listing visits each key at its last write, but a key written again while the listing runs comes round
 * a second time: that later sighting is the one that counts.
 */
export class RecentKeys {
  private readonly recent: string[] = [];

  constructor(private readonly limit: number) {}

  add(key: string): void {
    const seen = this.recent.indexOf(key);
    if (seen >= 0) this.recent.splice(seen, 1);
    this.recent.push(key);
    if (this.recent.length > this.limit) this.recent.shift();
  }

  /** The kept keys, oldest first. */
  keys(): string[] {
    return [...this.recent];
  }
}
