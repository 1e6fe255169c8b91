/**
 * What the CLI reads besides its arguments: a definition or document from a file, from stdin (`-`) or,
 * for an OpenAPI import, from an http(s) URL; and a secret from stdin (credential values and API keys
 * are never taken as arguments, which other users of the machine could read in the process list).
 * A problem is a {@link CliInputError}, printed as one line.
 */
import { readFile } from 'node:fs/promises';

export class CliInputError extends Error {
  override readonly name = 'CliInputError';
}

export interface CliInputSources {
  /** The process's stdin; absent when the CLI runs without one. */
  stdin?: AsyncIterable<string | Uint8Array>;
  fetch?: typeof fetch;
}

export async function readStdin(sources: CliInputSources, what: string): Promise<string> {
  if (sources.stdin === undefined) throw new CliInputError(`${what} is read from stdin, and there is none`);
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of sources.stdin) {
    text += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
  }
  return text + decoder.decode();
}

/** A secret on stdin: one line, its line break not part of it. */
export async function readSecret(sources: CliInputSources, what: string): Promise<string> {
  const secret = (await readStdin(sources, what)).replace(/\r?\n$/, '');
  if (secret === '') throw new CliInputError(`${what} read from stdin is empty`);
  return secret;
}

/** The text of a file, of stdin (`-`) or, when `allowUrl`, of an http(s) URL. */
export async function readSource(
  source: string,
  sources: CliInputSources,
  allowUrl: boolean,
): Promise<string> {
  if (source === '-') return readStdin(sources, 'the document');
  if (allowUrl && /^https?:\/\//i.test(source)) return fetchText(source, sources.fetch ?? globalThis.fetch);
  try {
    return await readFile(source, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliInputError(`cannot read ${source}${code ? ` (${code})` : ''}`, { cause: error });
  }
}

/** A file's (or stdin's) JSON. */
export async function readJsonSource(source: string, sources: CliInputSources): Promise<unknown> {
  const text = await readSource(source, sources, false);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliInputError(`${source === '-' ? 'stdin' : source} is not JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

async function fetchText(url: string, fetcher: typeof fetch): Promise<string> {
  const where = new URL(url);
  // Never echo credentials a URL may carry.
  const shown = `${where.origin}${where.pathname}`;
  let response: Response;
  try {
    response = await fetcher(url, {
      headers: { accept: 'application/json, application/yaml, text/yaml, */*' },
    });
  } catch (error) {
    throw new CliInputError(`cannot fetch ${shown}`, { cause: error });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new CliInputError(`fetching ${shown} answered HTTP ${response.status}`);
  }
  return response.text();
}
