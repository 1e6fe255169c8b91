/**
 * A KV key listing that does not come back short while the bucket is being written.
 *
 * nats.js `kv.keys()` ends its listing at the first delivered message whose pending count reads 0. Under
 * concurrent writes the server's per-message pending can read 0 before the last keys are delivered (seen
 * here on nats-server 2.9.10; nats.py reports it on 2.14), and a key rewritten while the listing runs loses
 * its old message (history 1) and comes round again only later. Either way keys that exist are missing:
 * `GET /v1/tasks` could leave out a task its account had just submitted.
 *
 * This listing reads the stream sequence of the last message under the filter, and ends only once it has
 * been delivered a message at or past the last sequence read at that moment: every key existing then has
 * been delivered at its last write. Pending 0 and idle heartbeats only prompt that check, never end the
 * listing by themselves.
 */
import { DeliverPolicy, type JsMsg, type ConsumerMessages } from '@nats-io/jetstream';
import type { Bucket, KV } from '@nats-io/kv';
import { KeyListingClosedError, KeyListingTimeoutError } from '../errors.js';

/** Long enough for a bucket of many thousand keys on a loaded server; a stalled listing ends with an error. */
const DEFAULT_LISTING_TIMEOUT_MS = 30_000;

/** The nats.js bucket behind `kv` (by shape: a second copy of the package would defeat instanceof). */
function asBucket(kv: KV): Bucket {
  const candidate = kv as Partial<Bucket>;
  if (
    candidate.js === undefined ||
    candidate.jsm === undefined ||
    typeof candidate.stream !== 'string' ||
    typeof candidate.fullKeyName !== 'function'
  ) {
    throw new TypeError('a key listing needs a KV bucket opened by nats.js Kvm');
  }
  return kv as Bucket;
}

export interface LatestKeysOptions {
  /** Bound on the whole listing. Default 30 s. */
  timeoutMs?: number;
}

/**
 * Calls `visit` with each live key of `kv` matching `filter` (a KV key pattern, `*` and `>` allowed), at
 * its last write and in the order of those writes, oldest first. A key written again while the listing
 * runs may be visited again later; the later visit is its newer position.
 */
export async function visitLatestKeys(
  kv: KV,
  filter: string,
  visit: (key: string) => void,
  options: LatestKeysOptions = {},
): Promise<void> {
  const bucket = asBucket(kv);
  const subject = bucket.fullKeyName(bucket.encodeKey(filter));
  const lastWritten = async (): Promise<number> =>
    (await bucket.jsm.streams.getMessage(bucket.stream, { last_by_subj: subject }))?.seq ?? 0;

  let boundary = await lastWritten();
  if (boundary === 0) return;
  const consumer = await bucket.js.consumers.getPushConsumer(bucket.stream, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.LastPerSubject,
    headers_only: true,
  });
  const initiallyPending = (await consumer.info(true)).num_pending;
  const timeoutMs = options.timeoutMs ?? DEFAULT_LISTING_TIMEOUT_MS;

  let highest = 0;
  let checking = false;
  let checkAgain = false;
  let finished = false;
  let messages: ConsumerMessages | undefined;
  let listed!: () => void;
  let failed!: (error: unknown) => void;
  const listing = new Promise<void>((resolve, reject) => {
    listed = resolve;
    failed = reject;
  });
  // Awaited below; a failure that comes before then is not an unhandled rejection.
  listing.catch(() => undefined);
  const finish = (error?: unknown): void => {
    if (finished) return;
    finished = true;
    messages?.stop();
    if (error === undefined) listed();
    else failed(error);
  };
  // Asks the stream for the last sequence under the filter: delivered up to it means listed.
  const check = (): void => {
    if (finished) return;
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = true;
    lastWritten().then(
      (last) => {
        checking = false;
        if (last <= highest) return finish();
        boundary = last;
        if (checkAgain) {
          checkAgain = false;
          check();
        }
      },
      (error: unknown) => finish(error),
    );
  };
  const onMessage = (message: JsMsg): void => {
    if (finished) return;
    highest = Math.max(highest, message.seq);
    const operation = message.headers?.get('KV-Operation');
    if (operation !== 'DEL' && operation !== 'PURGE') {
      visit(bucket.decodeKey(message.subject.substring(bucket.prefixLen)));
    }
    if (message.seq >= boundary || message.info.pending === 0) check();
  };

  const timer = setTimeout(() => finish(new KeyListingTimeoutError(bucket.bucket, timeoutMs)), timeoutMs);
  try {
    const consumed = await consumer.consume({ callback: onMessage });
    messages = consumed;
    void (async () => {
      for await (const status of consumed.status()) if (status.type === 'heartbeat') check();
    })();
    consumed.closed().then(
      () => finish(new KeyListingClosedError(bucket.bucket)),
      (error: unknown) => finish(new KeyListingClosedError(bucket.bucket, { cause: error })),
    );
    // Nothing was pending when the consumer was made: the keys `boundary` saw may have gone since.
    if (initiallyPending === 0) check();
    await listing;
  } finally {
    clearTimeout(timer);
    messages?.stop();
    await consumer.delete().catch(() => undefined);
  }
}

/** The live keys of `kv` matching `filter`, in the order of their last writes ({@link visitLatestKeys}). */
export async function listLatestKeys(kv: KV, filter: string, options?: LatestKeysOptions): Promise<string[]> {
  // A Set keeps insertion order: a key seen again moves to its later place.
  const keys = new Set<string>();
  await visitLatestKeys(
    kv,
    filter,
    (key) => {
      keys.delete(key);
      keys.add(key);
    },
    options,
  );
  return [...keys];
}
