/**
 * Process-wide filters that take secret VALUES out of text the process writes out, where redaction.ts
 * can only blank secret-NAMED fields. A service holding secrets in memory (the executor, while a task's
 * vault is open) adds a filter for as long as it holds them; every logger made by createLogger passes each
 * finished line through all filters, whichever code wrote it (error stacks included). Without a filter,
 * a line costs one size check.
 */

/** Returns the text with whatever it considers secret replaced. Must not throw. */
export type SecretFilter = (text: string) => string;

const filters = new Set<SecretFilter>();

/** Applies `filter` to every log line from now on; the returned function removes it again. */
export function addSecretFilter(filter: SecretFilter): () => void {
  filters.add(filter);
  return () => {
    filters.delete(filter);
  };
}

/** `text` through every filter added. */
export function filterSecrets(text: string): string {
  if (filters.size === 0) return text;
  let out = text;
  for (const filter of filters) out = filter(out);
  return out;
}
