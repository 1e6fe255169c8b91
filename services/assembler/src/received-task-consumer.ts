/**
 * The assembler's work loop: the durable pull consumer `assembler` on `mesh.tasks.received.*`, shared by
 * every instance. Each received task is validated (invalid ones are logged without payload and
 * terminated), checked for a cancel request (heard on the cancel broadcasts, or read from its status when
 * the task may predate this instance's listening), assembled inside an `assemble` span that continues the
 * task's trace, and either published for the executors or ended with one `error` event; the message is
 * acked only after that. Unexpected failures (NATS hiccups) are retried with a growing delay; after
 * {@link MAX_ASSEMBLY_ATTEMPTS} deliveries the task ends with an error instead of looping forever.
 *
 * ack_wait is short (ACK_WAIT_MS, seconds) so a task whose assembler died is taken over quickly, and a
 * message in hand gets in-progress acks every ACK_PROGRESS_MS from the moment it leaves the pull until it
 * is settled, so a slow assembly (a KV read across a reconnect) is never handed over while its assembler
 * lives.
 */
import {
  endMalformedTask,
  MalformedTaskReason,
  readMalformedTaskIdentity,
  type TaskStatusStore,
} from '@agentmesh/bus';
import {
  Consumers,
  describeZodError,
  nativeClassesOf,
  otelTraceIdOf,
  parseTaskSubject,
  ReceivedTask,
  redriveOf,
  type TaskMeta,
} from '@agentmesh/protocol';
import { injectTraceContext, taskParentContext, type Logger } from '@agentmesh/runtime';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { context, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { AssembledTaskPublisher } from './assembled-task-publisher.js';
import { AssemblerMetrics, type AssemblyEnding } from './assembler-metrics.js';
import type { CancelRequestLookup } from './cancel-requests.js';
import {
  AssemblyAttemptsExhaustedError,
  AssemblyFailedError,
  NativeToolUnprovidedError,
  TaskCancelledError,
  type AssemblyError,
} from './assembly-errors.js';
import { ConcurrencyLimit } from './concurrency-limit.js';
import { assembleTask, type AssemblyOutcome, type AssemblySources } from './task-assembler.js';
import type { TaskFailureRecorder } from './task-failure-recorder.js';

/** Deliveries of one received task before it is ended with an error. */
export const MAX_ASSEMBLY_ATTEMPTS = 5;
const MAX_RETRY_DELAY_MS = 30_000;

const tracer = trace.getTracer('assembler');
const decoder = new TextDecoder();

export interface ReceivedTaskConsumerOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  log: Logger;
  sources: AssemblySources;
  /** Cancel requests heard; a task they cannot vouch for has its status read. */
  cancels: CancelRequestLookup;
  statuses: TaskStatusStore;
  publisher: AssembledTaskPublisher;
  /** Which native tool classes running executors provide now. */
  nativeProviders: { unprovided(classNames: readonly string[]): string[] };
  failures: TaskFailureRecorder;
  /** Tasks assembled at once by this instance. */
  concurrency: number;
  /** The consumer's ack_wait: how soon a task held by a dead assembler is delivered again. */
  ackWaitMs: number;
  /** Interval of in-progress acks while a task is in hand; at most half of `ackWaitMs`. */
  ackProgressMs: number;
  /** By default the instruments of the global meter provider (so the consumer starts after telemetry). */
  metrics?: AssemblerMetrics;
}

/**
 * Creates the durable consumer, or brings an existing one (an older deployment's, with another
 * ack_wait) to these settings.
 */
export async function ensureAssemblerConsumer(
  jsm: JetStreamManager,
  settings: { ackWaitMs: number },
): Promise<void> {
  const { stream, durable_name, filter_subject } = Consumers.ASSEMBLER;
  const tunable = {
    ack_wait: nanos(settings.ackWaitMs),
    // One more than the attempts, so the delivery past the last attempt can end the task.
    max_deliver: MAX_ASSEMBLY_ATTEMPTS + 1,
  };
  try {
    await jsm.consumers.info(stream, durable_name);
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.ConsumerNotFound)
      throw error;
    try {
      await jsm.consumers.add(stream, {
        durable_name,
        filter_subject,
        ack_policy: AckPolicy.Explicit,
        deliver_policy: DeliverPolicy.All,
        ...tunable,
      });
      return;
    } catch (addError) {
      // Another instance created it in between: fall through and update it.
      if (!(addError instanceof JetStreamApiError)) throw addError;
    }
  }
  await jsm.consumers.update(stream, durable_name, tunable);
}

export class ReceivedTaskConsumer {
  private stopping = false;
  private readonly limit: ConcurrencyLimit;
  private readonly metrics: AssemblerMetrics;
  private loop: Promise<void> = Promise.resolve();
  private messages: ConsumerMessages | undefined;

  private constructor(private readonly options: ReceivedTaskConsumerOptions) {
    this.limit = new ConcurrencyLimit(options.concurrency);
    this.metrics = options.metrics ?? new AssemblerMetrics();
  }

  static async start(options: ReceivedTaskConsumerOptions): Promise<ReceivedTaskConsumer> {
    await ensureAssemblerConsumer(options.jsm, { ackWaitMs: options.ackWaitMs });
    const consumer = new ReceivedTaskConsumer(options);
    const { stream, durable_name } = Consumers.ASSEMBLER;
    const source = await options.js.consumers.get(stream, durable_name);
    consumer.messages = await source.consume({ max_messages: options.concurrency });
    consumer.loop = consumer.run(consumer.messages);
    return consumer;
  }

  /** Stops pulling, hands back buffered messages, and waits for the tasks in hand to finish. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.messages?.close();
    await this.loop;
    await this.limit.idle();
  }

  private async run(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const msg of messages) {
        // From here until it is settled the message is in hand, waiting for a slot included.
        const heartbeat = setInterval(() => msg.working(), this.options.ackProgressMs);
        await this.limit.acquire();
        if (this.stopping) {
          clearInterval(heartbeat);
          this.limit.release();
          msg.nak();
          continue;
        }
        void this.handle(msg)
          .catch((error: unknown) => this.options.log.error({ err: error }, 'received task handling failed'))
          .finally(() => {
            clearInterval(heartbeat);
            this.limit.release();
          });
      }
    } catch (error) {
      this.options.log.error({ err: error }, 'received task consumer stopped unexpectedly');
    }
  }

  private async handle(msg: JsMsg): Promise<void> {
    const parsed = parseReceivedTask(msg.data);
    if (!parsed.ok) {
      // The payload may hold anything, secrets included: only where it came from and what is wrong.
      this.options.log.warn(
        { subject: msg.subject, stream_seq: msg.seq, problems: parsed.problems },
        'received task is invalid; dropped',
      );
      const paths = [...new Set(parsed.problems.map((problem) => problem.path || '(root)'))].slice(0, 10);
      const problem =
        parsed.reason === MalformedTaskReason.NOT_JSON
          ? 'the payload is not JSON'
          : `the payload is not a ReceivedTask (${paths.join(', ')})`;
      return this.dropMalformed(msg, parsed.reason, problem);
    }
    const meta = parsed.task.task_meta;
    const subjectAccount = parseTaskSubject(msg.subject)?.accountId;
    if (subjectAccount !== meta.account_id) {
      // Only the gateway publishes here, under the task's own account: a task naming another account
      // than its subject was forged or re-published. Nothing is written for either account, since the
      // payload's claims are exactly what cannot be trusted.
      this.options.log.warn(
        { subject: msg.subject, stream_seq: msg.seq, claimed_account_id: meta.account_id },
        'received task names another account than its subject; dropped',
      );
      return this.dropMalformed(msg, MalformedTaskReason.ACCOUNT_MISMATCH, 'account mismatch');
    }
    const ended = this.metrics.startAssembly();
    // A sub-task's spans join its root task's trace.
    const parent = taskParentContext(msg.headers, otelTraceIdOf(meta));
    const span = tracer.startSpan(
      'assemble',
      {
        kind: SpanKind.CONSUMER,
        attributes: {
          'agentmesh.account_id': meta.account_id,
          'agentmesh.workflow_id': meta.workflow_id,
          'messaging.message.delivery_count': msg.info.deliveryCount,
        },
      },
      parent,
    );
    try {
      await context.with(trace.setSpan(parent, span), () => this.assemble(msg, parsed.task, { span, ended }));
    } finally {
      span.end();
    }
  }

  /**
   * Ends the task a malformed message names, where its account and trace id can be read (see
   * endMalformedTask), counts the message, and terminates it; a failed ending is retried by redelivery.
   */
  private async dropMalformed(msg: JsMsg, reason: MalformedTaskReason, problem: string): Promise<void> {
    const identity = readMalformedTaskIdentity(msg.subject, msg.data);
    const attempt = msg.info.deliveryCount;
    if (identity !== undefined) {
      try {
        const ending = await endMalformedTask({
          js: this.options.js,
          jsm: this.options.jsm,
          statuses: this.options.statuses,
          identity,
          problem,
          attempt,
          headers: () => injectTraceContext(),
        });
        this.options.log.info(
          { trace_id: identity.traceId, account_id: identity.accountId, reason, ...ending },
          'ended the task of an invalid received task',
        );
      } catch (error) {
        if (attempt < MAX_ASSEMBLY_ATTEMPTS) {
          this.options.log.warn(
            { err: error, attempt },
            'could not end the task of an invalid message; retrying',
          );
          msg.nak(retryDelayMs(attempt));
          return;
        }
        this.options.log.error({ err: error, attempt }, 'could not end the task of an invalid message');
      }
    }
    this.metrics.malformedTasks.add(1, { reason });
    // No reason text: servers before 2.10 do not understand `+TERM <reason>` and would keep the message.
    msg.term();
  }

  private async assemble(msg: JsMsg, task: ReceivedTask, observers: AssemblyObservers): Promise<void> {
    const attempt = msg.info.deliveryCount;
    try {
      const outcome: AssemblyOutcome =
        attempt > MAX_ASSEMBLY_ATTEMPTS
          ? { ok: false, failure: new AssemblyAttemptsExhaustedError(MAX_ASSEMBLY_ATTEMPTS) }
          : await this.tryAssemble(task, storedAtMs(msg));
      if (!outcome.ok) return await this.end(msg, task.task_meta, outcome.failure, attempt, observers);
      // A task the gateway re-drove (its first message lost) is published under its re-drive's own id.
      const redrive = redriveOf(
        msg.headers?.get('Nats-Msg-Id'),
        task.task_meta.account_id,
        task.task_meta.trace_id,
      );
      const { duplicate } = await this.options.publisher.publish(outcome.task, redrive);
      msg.ack();
      observers.ended('published');
      this.options.log.info(
        {
          workflow_id: task.task_meta.workflow_id,
          tools: outcome.task.runtime_config.tools.length,
          pre_assembled: task.runtime_config !== undefined,
          duplicate,
        },
        'task assembled',
      );
    } catch (error) {
      await this.retryOrEnd(msg, task.task_meta, error, attempt, observers);
    }
  }

  private async tryAssemble(task: ReceivedTask, storedAtMs: number): Promise<AssemblyOutcome> {
    const cancelledAt = await this.cancelRequestedAt(task.task_meta, storedAtMs);
    if (cancelledAt !== undefined) return { ok: false, failure: new TaskCancelledError(cancelledAt) };
    const outcome = await assembleTask(task, this.options.sources);
    if (!outcome.ok) return outcome;
    const tools = outcome.task.runtime_config.tools;
    const unprovided = this.options.nativeProviders.unprovided(nativeClassesOf(tools));
    if (unprovided.length === 0) return outcome;
    const needing = tools.filter((tool) => tool.type === 'NATIVE' && unprovided.includes(tool.class_name));
    return {
      ok: false,
      failure: new NativeToolUnprovidedError(
        unprovided,
        needing.map((tool) => tool.name),
      ),
    };
  }

  private async cancelRequestedAt(meta: TaskMeta, storedAtMs: number): Promise<string | undefined> {
    const heard = this.options.cancels.check(meta.account_id, meta.trace_id, storedAtMs);
    if (heard.state === 'requested') return heard.requestedAt;
    if (heard.state === 'none') return undefined;
    return (await this.options.statuses.get(meta.account_id, meta.trace_id))?.cancel_requested_at;
  }

  private async end(
    msg: JsMsg,
    meta: TaskMeta,
    failure: AssemblyError,
    attempt: number,
    { span, ended }: AssemblyObservers,
  ): Promise<void> {
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.code });
    const { emitted } = await this.options.failures.record(meta, failure, attempt);
    msg.ack();
    ended(failure.code);
    this.options.log.info(
      { workflow_id: meta.workflow_id, code: failure.code, detail: failure.detail, emitted },
      'task ended by the assembler',
    );
  }

  private async retryOrEnd(
    msg: JsMsg,
    meta: TaskMeta,
    error: unknown,
    attempt: number,
    observers: AssemblyObservers,
  ): Promise<void> {
    const cause = error instanceof Error ? error : new Error(String(error));
    observers.span.recordException(cause);
    const retryable = (cause as { retryable?: unknown }).retryable !== false;
    if (retryable && attempt < MAX_ASSEMBLY_ATTEMPTS) {
      this.options.log.warn({ err: cause, attempt }, 'assembly failed; the task will be retried');
      msg.nak(retryDelayMs(attempt));
      return;
    }
    const failure = retryable
      ? new AssemblyAttemptsExhaustedError(attempt, { cause })
      : new AssemblyFailedError(cause);
    this.options.log.error({ err: cause, attempt }, 'assembly failed; ending the task');
    try {
      await this.end(msg, meta, failure, attempt, observers);
    } catch (recordError) {
      this.options.log.error({ err: recordError }, 'could not end the task; it will be redelivered');
      msg.nak(retryDelayMs(attempt));
    }
  }
}

/** What records one assembly attempt: its span, and the metrics told how it ended the task. */
interface AssemblyObservers {
  span: Span;
  ended: (ending: AssemblyEnding) => void;
}

/** When the server stored the received task (its clock), in ms since the epoch. */
function storedAtMs(msg: JsMsg): number {
  return Math.floor(msg.info.timestampNanos / 1_000_000);
}

function retryDelayMs(attempt: number): number {
  return Math.min(1000 * 2 ** (attempt - 1), MAX_RETRY_DELAY_MS);
}

type ParsedReceivedTask =
  | { ok: true; task: ReceivedTask }
  | {
      ok: false;
      reason: MalformedTaskReason;
      problems: readonly { path: string; message: string }[];
    };

export function parseReceivedTask(data: Uint8Array): ParsedReceivedTask {
  let json: unknown;
  try {
    json = JSON.parse(decoder.decode(data));
  } catch {
    return {
      ok: false,
      reason: MalformedTaskReason.NOT_JSON,
      problems: [{ path: '', message: 'not valid JSON' }],
    };
  }
  const parsed = ReceivedTask.safeParse(json);
  return parsed.success
    ? { ok: true, task: parsed.data }
    : {
        ok: false,
        reason: MalformedTaskReason.SCHEMA,
        problems: describeZodError(parsed.error).detail.issues,
      };
}
