/**
 * The secrets of every task an executor is running right now, as one scrubber for what leaves the
 * process without belonging to one task: log lines (whichever task, library or error stack wrote them)
 * and span attributes. A task's scrubber is held from before its vault opens until its attempt and its
 * span have ended; values it learns meanwhile (a fetched token) count at once. With one task running, its
 * own scrubber serves (no second matcher is built for the same values); with several, a combined matcher
 * is rebuilt only when the values they hold together change. Tasks of one account mostly hold the same
 * values, so a task starting or ending while others run usually changes nothing there; rebuilding on
 * every start and end was a measurable share of a busy executor's CPU.
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
    return this.current().scrub(text);
  }

  /** The scrubber {@link scrub} uses now: the one task's own, or the combined one. */
  current(): SecretScrubber {
    if (this.#held.size === 1) {
      const [only] = this.#held;
      if (only !== undefined) return only;
    }
    let versions = 0;
    for (const scrubber of this.#held) versions += scrubber.version;
    const stamp = `${this.#changes}:${versions}`;
    if (this.#combined?.stamp !== stamp) {
      const values = new Set<string>();
      for (const scrubber of this.#held) for (const value of scrubber.values) values.add(value);
      const known = this.#combined?.scrubber;
      const same = known !== undefined && sameValues(known.values, values);
      this.#combined = { stamp, scrubber: same ? known : new SecretScrubber(values) };
    }
    return this.#combined.scrubber;
  }
}

function sameValues(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const value of a) if (!b.has(value)) return false;
  return true;
}
