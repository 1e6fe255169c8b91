/**
 * Metrics of the gateway (SPEC §6): HTTP requests after the OpenTelemetry HTTP server conventions
 * (`http.server.request.duration` by method, route template and status), task submissions by outcome
 * (HTTP and NATS ingress alike), the event streams open, and the depth of the task queue in JetStream.
 * Attributes stay few and bounded: route templates (never a URL with its ids), status codes, error
 * codes, stages — never accounts, keys, trace ids or bodies.
 */
import type { ErrorCode } from '@agentmesh/protocol';
import {
  metrics,
  type Counter,
  type Histogram,
  type Meter,
  type ObservableCallback,
  type ObservableGauge,
  type ObservableUpDownCounter,
} from '@opentelemetry/api';
import type { QueueDepth } from './task-queue-depth.js';

export const GATEWAY_METER = 'agentmesh-gateway';

export const GatewayMetric = {
  HTTP_REQUEST_DURATION: 'http.server.request.duration',
  TASK_SUBMISSIONS: 'agentmesh.task.submissions',
  EVENT_STREAMS_ACTIVE: 'agentmesh.event_streams.active',
  TASK_QUEUE_DEPTH: 'agentmesh.task.queue.depth',
} as const;

/** How a submission ended, as the `outcome` attribute of {@link GatewayMetric.TASK_SUBMISSIONS}. */
export const SubmissionOutcome = {
  ACCEPTED: 'accepted',
  /** A repeat of an earlier submission (idempotency key or trace id): answered with the first task's reply. */
  DUPLICATE: 'duplicate',
  /** Refused; `error.type` says why. */
  REFUSED: 'refused',
} as const;
export type SubmissionOutcome = (typeof SubmissionOutcome)[keyof typeof SubmissionOutcome];

// The HTTP semantic conventions' attribute names.
const HttpAttribute = {
  METHOD: 'http.request.method',
  ROUTE: 'http.route',
  STATUS_CODE: 'http.response.status_code',
  URL_SCHEME: 'url.scheme',
  ERROR_TYPE: 'error.type',
} as const;
const OUTCOME = 'outcome';
const STAGE = 'stage';

// The conventions' method set; anything else is `_OTHER`, so a client cannot invent attribute values.
const KNOWN_METHODS = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'TRACE',
]);
// The bucket boundaries the HTTP conventions advise.
const HTTP_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

export interface HttpRequestRecord {
  method: string;
  /** The matched route's template (`/v1/tasks/:trace_id`); undefined when no route matched. */
  route: string | undefined;
  statusCode: number;
  seconds: number;
}

/** The gateway's instruments; create it once the meter provider is registered (the API has no proxy). */
export class GatewayMetrics {
  readonly #requestDuration: Histogram;
  readonly #submissions: Counter;
  readonly #streamsActive: ObservableUpDownCounter;
  readonly #queueDepth: ObservableGauge;

  constructor(meter: Meter = metrics.getMeter(GATEWAY_METER)) {
    this.#requestDuration = meter.createHistogram(GatewayMetric.HTTP_REQUEST_DURATION, {
      description: 'Duration of HTTP server requests',
      unit: 's',
      advice: { explicitBucketBoundaries: HTTP_SECONDS },
    });
    this.#submissions = meter.createCounter(GatewayMetric.TASK_SUBMISSIONS, {
      description: 'Task submissions (HTTP and NATS ingress), by outcome',
      unit: '{task}',
    });
    this.#streamsActive = meter.createObservableUpDownCounter(GatewayMetric.EVENT_STREAMS_ACTIVE, {
      description: 'Task event streams (SSE) open on this gateway instance',
      unit: '{stream}',
    });
    this.#queueDepth = meter.createObservableGauge(GatewayMetric.TASK_QUEUE_DEPTH, {
      description: 'Tasks waiting in JetStream for the stage that reads them (consumer num_pending)',
      unit: '{task}',
    });
  }

  /** One HTTP request answered (an SSE stream counts when it ends). */
  httpRequest({ method, route, statusCode, seconds }: HttpRequestRecord): void {
    this.#requestDuration.record(seconds, {
      [HttpAttribute.METHOD]: KNOWN_METHODS.has(method) ? method : '_OTHER',
      [HttpAttribute.URL_SCHEME]: 'http',
      [HttpAttribute.STATUS_CODE]: statusCode,
      ...(route === undefined ? {} : { [HttpAttribute.ROUTE]: route }),
      // The conventions' error.type for a server error is its status code.
      ...(statusCode >= 500 ? { [HttpAttribute.ERROR_TYPE]: String(statusCode) } : {}),
    });
  }

  /** One submission answered; `errorCode` is the refusal's code. */
  taskSubmission(outcome: SubmissionOutcome, errorCode?: ErrorCode): void {
    this.#submissions.add(1, {
      [OUTCOME]: outcome,
      ...(errorCode === undefined ? {} : { [HttpAttribute.ERROR_TYPE]: errorCode }),
    });
  }

  /** Reports `open()` as the streams open at each collection; call what it returns to stop. */
  observeEventStreams(open: () => number): () => void {
    const callback: ObservableCallback = (result) => result.observe(open());
    this.#streamsActive.addCallback(callback);
    return () => this.#streamsActive.removeCallback(callback);
  }

  /**
   * Reports the queue depth `read()` gives at each collection. `read` must be cheap to call often (it
   * answers from a cache): collections are as frequent as the exporter wants.
   */
  observeQueueDepth(read: () => Promise<readonly QueueDepth[]>): () => void {
    const callback: ObservableCallback = async (result) => {
      for (const { stage, pending } of await read()) result.observe(pending, { [STAGE]: stage });
    };
    this.#queueDepth.addCallback(callback);
    return () => this.#queueDepth.removeCallback(callback);
  }
}
