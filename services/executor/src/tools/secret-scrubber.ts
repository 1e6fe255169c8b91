// Removes secrets from what a tool call returns. APIs echo requests in their errors (and sometimes in their
// answers), so every vault value of the task, and everything derived from one (Basic credentials, OAuth2
// tokens), is replaced before text leaves the runner. Also covers the URL-encoded forms a query string shows.

const REDACTED = '[REDACTED]';

/** Shorter values would blank out ordinary text everywhere; they are too weak to be worth hiding anyway. */
const MIN_SECRET_LENGTH = 4;

export class SecretScrubber {
  readonly #secrets = new Set<string>();

  constructor(secrets: Iterable<string> = []) {
    for (const secret of secrets) this.add(secret);
  }

  add(secret: string): void {
    if (secret.length < MIN_SECRET_LENGTH) return;
    this.#secrets.add(secret);
    this.#secrets.add(encodeURIComponent(secret));
    this.#secrets.add(new URLSearchParams({ s: secret }).toString().slice(2));
  }

  scrub(text: string): string {
    let out = text;
    // Longest first, so a secret that contains another is replaced whole.
    for (const secret of [...this.#secrets].sort((a, b) => b.length - a.length)) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return out;
  }

  /**
   * Scrubs text that was cut off at its end (a bounded read, an excerpt): a secret's beginning left standing
   * at the cut is removed as well, since the full-value search cannot see it.
   */
  scrubCut(text: string): string {
    const scrubbed = this.scrub(text);
    for (const secret of this.#secrets) {
      for (let length = Math.min(secret.length - 1, scrubbed.length); length >= 1; length -= 1) {
        if (scrubbed.endsWith(secret.slice(0, length))) return scrubbed.slice(0, -length) + REDACTED;
      }
    }
    return scrubbed;
  }

  /** Scrubs every string (keys included) inside a JSON-like value. */
  scrubDeep(value: unknown): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (Array.isArray(value)) return value.map((item) => this.scrubDeep(item));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [this.scrub(key), this.scrubDeep(item)]),
      );
    }
    return value;
  }
}
