/**
 * The last `limit` distinct keys of a stream of KV keys, newest last, holding no more than `limit` at
 * once. A KV key listing delivers each key at its last write, but a key written again while the listing
 * runs comes round a second time: that later sighting is the one that counts.
 */
export async function lastDistinctKeys(keys: AsyncIterable<string>, limit: number): Promise<string[]> {
  const recent: string[] = [];
  for await (const key of keys) {
    const seen = recent.indexOf(key);
    if (seen >= 0) recent.splice(seen, 1);
    recent.push(key);
    if (recent.length > limit) recent.shift();
  }
  return recent;
}
