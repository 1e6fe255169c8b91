// Keeping a task's secrets out of everything the executor sends or writes: the scrubber (every value of a
// vault and what is derived from it, in raw, escaped, encoded, base64 and any-case forms), its streaming
// form for model deltas, the open secrets of all running tasks (for log lines and spans) and a span that
// filters what is set on it.
export { REDACTED } from './cut-out.js';
export { derivedSecrets } from './derived-secrets.js';
export { OpenSecrets } from './open-secrets.js';
export { ScrubbedSpan, type TextFilter } from './scrubbed-span.js';
export { ScrubbingStream } from './scrubbing-stream.js';
export { LONG_SECRET_LENGTH } from './secret-forms.js';
export { SecretScrubber } from './secret-scrubber.js';
