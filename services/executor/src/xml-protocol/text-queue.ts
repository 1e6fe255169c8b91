/**
 * Text held back in the pieces it arrived in. Appending and taking from the front cost the pieces
 * touched, not the text held: joining held text with each new delta into one string would copy it all
 * again on every delta.
 */
export class TextQueue {
  #pieces: string[] = [];
  #head = 0;
  /** Characters of `#pieces[#head]` already taken. */
  #headTaken = 0;
  #length = 0;

  get length(): number {
    return this.#length;
  }

  append(text: string): void {
    if (text === '') return;
    this.#pieces.push(text);
    this.#length += text.length;
  }

  /** Removes and returns the first `count` characters (all there are, if fewer). */
  take(count: number): string {
    let out = '';
    let left = Math.min(count, this.#length);
    this.#length -= left;
    while (left > 0) {
      const piece = this.#pieces[this.#head]!;
      const available = piece.length - this.#headTaken;
      if (available <= left) {
        out += this.#headTaken === 0 ? piece : piece.slice(this.#headTaken);
        left -= available;
        this.#head++;
        this.#headTaken = 0;
      } else {
        out += piece.slice(this.#headTaken, this.#headTaken + left);
        this.#headTaken += left;
        left = 0;
      }
    }
    if (this.#head === this.#pieces.length) {
      this.#pieces = [];
      this.#head = 0;
    } else if (this.#head > 64 && this.#head * 2 > this.#pieces.length) {
      this.#pieces = this.#pieces.slice(this.#head);
      this.#head = 0;
    }
    return out;
  }

  takeAll(): string {
    return this.take(this.#length);
  }
}
