/**
 * Starts the queued runs of threads: a watch on `mesh_threads` (every gateway runs one) that publishes the
 * task of every active run still carrying it — a run promoted from the queue by an executor that freed its
 * thread (executors may not queue tasks), or by a gateway that died before publishing. The watch replays
 * every record when it starts, so a promotion made while no gateway watched is published by the next one to
 * start; several gateways publishing one run store it once (Nats-Msg-Id `<account>.<trace_id>`).
 */
import { ThreadRecord } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { decodeJson } from '../json.js';
import type { ThreadStore } from './thread-store.js';

export interface ThreadPromoterOptions {
  /** Told about a run this promoter published. */
  onPublished?: (accountId: string, threadId: string, traceId: string) => void;
  /** Told about a record it could not read or a publish that failed (the next write of the thread retries). */
  onError?: (error: unknown) => void;
  /** Pause before a watch that ended is started again. Default 1 s. */
  retryDelayMs?: number;
}

export function startThreadPromoter(
  kv: KV,
  store: ThreadStore,
  options: ThreadPromoterOptions = {},
): { stop(): void } {
  let stopped = false;
  let current: Awaited<ReturnType<KV['watch']>> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const follow = async (): Promise<void> => {
    if (stopped) return;
    try {
      current = await kv.watch();
      for await (const entry of current) {
        if (stopped) return;
        if (entry.operation !== 'PUT') continue;
        let record: ThreadRecord;
        try {
          record = decodeJson(ThreadRecord, entry.value, `mesh_threads/${entry.key}`);
        } catch (error) {
          options.onError?.(error);
          continue;
        }
        if (record.active?.task === undefined) continue;
        try {
          const published = await store.publishPromoted(record.account_id, record.thread_id);
          if (published !== undefined) options.onPublished?.(record.account_id, record.thread_id, published);
        } catch (error) {
          options.onError?.(error);
        }
      }
    } catch (error) {
      if (!stopped) options.onError?.(error);
    }
    if (stopped) return;
    timer = setTimeout(() => void follow(), options.retryDelayMs ?? 1_000);
    timer.unref();
  };
  void follow();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
      current?.stop();
    },
  };
}
