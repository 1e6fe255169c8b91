// Path keys of an OpenAPI `paths` object are not always bare templates. Real documents make keys unique
// with a fragment (`/files/{file_id}#get_shared_link`) or pin a query (`/responses/{id}/input_items?beta=true`).
// Neither is part of the template: a fragment never reaches the server (it only told two keys apart), and a
// fixed query is a set of query parameters the request always carries, beside the operation's own.

export interface PathKey {
  /** The path template (`/files/{file_id}`), without fragment or query. */
  readonly template: string;
  /** Query parameters the key fixes, decoded, in order (`?beta=true` → `[['beta', 'true']]`). */
  readonly fixedQuery: Array<[string, string]>;
}

export function splitPathKey(key: string): PathKey {
  const hash = key.indexOf('#');
  const withoutFragment = hash === -1 ? key : key.slice(0, hash);
  const question = withoutFragment.indexOf('?');
  if (question === -1) return { template: withoutFragment, fixedQuery: [] };
  const fixedQuery = [...new URLSearchParams(withoutFragment.slice(question + 1)).entries()];
  return { template: withoutFragment.slice(0, question), fixedQuery };
}
