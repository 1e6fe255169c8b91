/**
 * Removes a set of secret values from text and JSON-like values: every vault value of a task, and what is
 * derived from one (Basic credentials and their base64, OAuth2 tokens fetched with them, the model key),
 * in every form the matcher covers (secret-matcher.ts). Values can be added while a task runs (a token
 * fetched mid-task); the matcher is rebuilt on the next use. With no values, scrubbing costs nothing.
 */
import { cutOut } from './cut-out.js';
import { SecretMatcher, type TextRange } from './secret-matcher.js';

export class SecretScrubber {
  readonly #values = new Set<string>();
  #matcher: SecretMatcher | undefined;
  #version = 0;

  constructor(values: Iterable<string> = []) {
    this.addAll(values);
  }

  add(value: string): void {
    if (value === '' || this.#values.has(value)) return;
    this.#values.add(value);
    this.#matcher = undefined;
    this.#version++;
  }

  addAll(values: Iterable<string>): void {
    for (const value of values) this.add(value);
  }

  get values(): ReadonlySet<string> {
    return this.#values;
  }

  /** Grows with every value added, so holders of a derived matcher know when to rebuild it. */
  get version(): number {
    return this.#version;
  }

  get matcher(): SecretMatcher {
    this.#matcher ??= new SecretMatcher(this.#values);
    return this.#matcher;
  }

  scrub(text: string): string {
    if (this.#values.size === 0) return text;
    return cutOut(text, this.matcher.find(text, { final: true }).ranges);
  }

  /**
   * Scrubs text that was cut off at its end (a bounded read, an excerpt): whatever at the cut may be the
   * beginning of a secret is removed as well, since no full form of it is there to be found.
   */
  scrubCut(text: string): string {
    if (this.#values.size === 0) return text;
    const { ranges, settledUpTo } = this.matcher.find(text, { final: false });
    const tail: TextRange[] = settledUpTo < text.length ? [[settledUpTo, text.length]] : [];
    return cutOut(text, [...ranges, ...tail]);
  }

  /** Scrubs every string (keys included) inside a JSON-like value; other values are kept as they are. */
  scrubDeep<T>(value: T): T {
    if (this.#values.size === 0) return value;
    return this.#deep(value) as T;
  }

  #deep(value: unknown): unknown {
    if (typeof value === 'string') return this.scrub(value);
    if (Array.isArray(value)) return value.map((item) => this.#deep(item));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.entries(value).map(([key, item]) => [this.scrub(key), this.#deep(item)]),
      );
    }
    return value;
  }
}
