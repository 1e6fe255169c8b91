/**
 * The secrets of every task an executor is running right now, as one scrubber for what leaves the
 * process without belonging to one task: log lines (whichever task, library or error stack wrote them)
 * and span attributes. A task's scrubber is held from before its vault opens until its attempt and its
 * span have ended; values it learns meanwhile (a fetched token) count at once. With one task running, its
 * own scrubber serves (no second matcher is built for the same values); with several, a combined matcher
 * is rebuilt only when the held scrubbers or their values change.
 */
import { SecretScrubber } from './secret-scrubber.js';

export class OpenSecrets {
  readonly #held = new Set<SecretScrubber>();
  #changes = 0;
  #combined: { stamp: string; scrubber: SecretScrubber } | undefined;

  /** Counts `scrubber`'s values in until the returned function is called. */
  hold(scrubber: SecretScrubber): () => void {
    this.#held.add(scrubber);
    this.#changes++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#held.delete(scrubber);
      this.#changes++;
    };
  }

  scrub(text: string): string {
    if (this.#held.size === 0) return text;
    return this.#current().scrub(text);
  }

  #current(): SecretScrubber {
    if (this.#held.size === 1) {
      const [only] = this.#held;
      if (only !== undefined) return only;
    }
    let versions = 0;
    for (const scrubber of this.#held) versions += scrubber.version;
    const stamp = `${this.#changes}:${versions}`;
    if (this.#combined?.stamp !== stamp) {
      const combined = new SecretScrubber();
      for (const scrubber of this.#held) combined.addAll(scrubber.values);
      this.#combined = { stamp, scrubber: combined };
    }
    return this.#combined.scrubber;
  }
}
