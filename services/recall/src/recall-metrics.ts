/**
 * Metrics of the recall (seed 004 phase 3, SPEC §6): recall requests by outcome and their latency, every
 * HTTP attempt to an upstream by upstream and outcome, and the cache lookups by cache and result.
 * Attributes stay few and bounded: outcomes, error codes, failure reasons, upstream and cache names —
 * never ids of networks, objects, boxes or tools, accounts, identities or trace ids.
 */
import type { ErrorCode } from '@agentmesh/protocol';
import { metrics, type Counter, type Histogram, type Meter } from '@opentelemetry/api';
import { CacheSource } from './cache/layered-cache.js';
import type { UpstreamFailureDetail } from './recall-errors.js';

export const RECALL_METER = 'agentmesh-recall';

export const RecallMetric = {
  REQUESTS: 'agentmesh.recall.requests',
  DURATION: 'agentmesh.recall.duration',
  UPSTREAM_CALLS: 'agentmesh.recall.upstream.calls',
  UPSTREAM_DURATION: 'agentmesh.recall.upstream.duration',
  CACHE_LOOKUPS: 'agentmesh.recall.cache.lookups',
} as const;

/** The recall's two caches, as the `cache` attribute. */
export const RecallCache = { ACTIONS: 'actions', TOOLS: 'tools' } as const;
export type RecallCache = (typeof RecallCache)[keyof typeof RecallCache];

/** What a cache lookup found, as the `result` attribute. */
export const CacheResult = { MEMORY_HIT: 'memory_hit', SHARED_HIT: 'shared_hit', MISS: 'miss' } as const;
export type CacheResult = (typeof CacheResult)[keyof typeof CacheResult];

const RESULT_OF_SOURCE: Record<CacheSource, CacheResult> = {
  [CacheSource.MEMORY]: CacheResult.MEMORY_HIT,
  [CacheSource.SHARED]: CacheResult.SHARED_HIT,
  [CacheSource.UPSTREAM]: CacheResult.MISS,
};

const OUTCOME = 'outcome';
const UPSTREAM = 'upstream';
const STATUS_CODE = 'http.response.status_code';

// A recall is one or two upstream calls (each up to UPSTREAM_TIMEOUT_MS, retried), or a cache hit.
const RECALL_SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const UPSTREAM_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The recall's instruments; create it once the meter provider is registered (the API has no proxy). */
export class RecallMetrics {
  readonly #requests: Counter;
  readonly #duration: Histogram;
  readonly #upstreamCalls: Counter;
  readonly #upstreamDuration: Histogram;
  readonly #cacheLookups: Counter;

  constructor(meter: Meter = metrics.getMeter(RECALL_METER)) {
    this.#requests = meter.createCounter(RecallMetric.REQUESTS, {
      description: 'Recall requests answered, by outcome',
      unit: '{request}',
    });
    this.#duration = meter.createHistogram(RecallMetric.DURATION, {
      description: 'Time from a recall request to its answer',
      unit: 's',
      advice: { explicitBucketBoundaries: RECALL_SECONDS },
    });
    this.#upstreamCalls = meter.createCounter(RecallMetric.UPSTREAM_CALLS, {
      description: 'HTTP attempts to an upstream (retries included), by upstream and outcome',
      unit: '{call}',
    });
    this.#upstreamDuration = meter.createHistogram(RecallMetric.UPSTREAM_DURATION, {
      description: 'Duration of HTTP attempts to an upstream',
      unit: 's',
      advice: { explicitBucketBoundaries: UPSTREAM_SECONDS },
    });
    this.#cacheLookups = meter.createCounter(RecallMetric.CACHE_LOOKUPS, {
      description: 'Cache lookups, by cache and result',
      unit: '{lookup}',
    });
  }

  /** Starts timing one recall request; call what it returns with its error code, or none when answered. */
  request(): (errorCode?: ErrorCode) => void {
    const startedAt = performance.now();
    return (errorCode) => {
      const attributes = { [OUTCOME]: errorCode?.toLowerCase() ?? 'ok' };
      this.#requests.add(1, attributes);
      this.#duration.record(secondsSince(startedAt), attributes);
    };
  }

  /**
   * Starts timing one HTTP attempt to `upstream`; call what it returns with how it failed, or nothing when
   * it answered 2xx JSON. A failure without detail is an unexpected error.
   */
  upstreamCall(upstream: string): (failure?: UpstreamFailureDetail | 'error') => void {
    const startedAt = performance.now();
    return (failure) => {
      const attributes = {
        [UPSTREAM]: upstream,
        [OUTCOME]: failure === undefined ? 'ok' : failure === 'error' ? 'error' : failure.reason,
        ...(typeof failure === 'object' && failure.status !== undefined
          ? { [STATUS_CODE]: failure.status }
          : {}),
      };
      this.#upstreamCalls.add(1, attributes);
      this.#upstreamDuration.record(secondsSince(startedAt), attributes);
    };
  }

  /** One lookup in `cache`, by where its value came from (a miss: from the upstream, or failing there). */
  cacheLookup(cache: RecallCache, source: CacheSource): void {
    this.#cacheLookups.add(1, { cache, result: RESULT_OF_SOURCE[source] });
  }
}

function secondsSince(startedAt: number): number {
  return (performance.now() - startedAt) / 1000;
}
