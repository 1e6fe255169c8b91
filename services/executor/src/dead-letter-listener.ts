/**
 * Dead letters in the executor. `DeadLetterRecorder` copies a task that ran out of deliveries into
 * MESH_DEAD_LETTERS (called by the task runner where it writes MAX_DELIVER_EXCEEDED). `DeadLetterListener`
 * covers the case the runner never sees: the last delivery itself died (the executor was killed on it, or it
 * was handed back), so JetStream gives up on the message and sends its MAX_DELIVERIES advisory. The
 * listener (one per executor, in a queue group: one instance handles each advisory) reads the message by
 * its stream sequence, dead-letters it, writes the task's MAX_DELIVER_EXCEEDED `error` event and status if
 * the task has no terminal event yet, and deletes the message, which a work queue would otherwise keep
 * (nats-server 2.9 leaves a message that exhausted its deliveries in the stream).
 *
 * Every step is idempotent (the letter is added once per task, the event writer's sequence check refuses a
 * second terminal event, a deleted message is not found), so a repeat of the work is harmless.
 *
 * A task whose deliveries ran out while an attempt of it still lives is left to that attempt, but its message
 * is gone and JetStream will not deliver it again: the listener keeps asking whether that attempt lives
 * until the task ends, and ends it as out of deliveries (dead-lettered, re-drivable) if the attempt dies
 * first. Otherwise a task spared this way and then killed would say `running` for ever.
 */
import {
  deadLetterOf,
  type DeadLetterStore,
  EventStreamConflictError,
  isJetStreamApiError,
  TaskEventWriter,
  type TaskStatusStore,
} from '@agentmesh/bus';
import {
  AssembledTask,
  ErrorCode,
  EventType,
  executorConsumer,
  isFinalTaskStatus,
  parseTaskSubject,
  Streams,
  TaskStatus,
  taskMaxDeliveriesAdvisories,
  type DeadLetterReason,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import { JetStreamApiCodes, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';
import type { AttemptOwners } from './attempt-owners.js';
import { runningInstance } from './attempt-status.js';

/** The queue group of the listeners: each advisory is handled by one executor. */
const LISTENER_QUEUE = 'executor-dead-letters';

/** `io.nats.jetstream.advisory.v1.max_deliver` (nats-server JSConsumerDeliveryExceededAdvisory). */
const MaxDeliveriesAdvisory = z.object({
  stream: z.string(),
  consumer: z.string(),
  stream_seq: z.int().positive(),
  deliveries: z.int().nonnegative(),
});
type MaxDeliveriesAdvisory = z.infer<typeof MaxDeliveriesAdvisory>;

/** What the task runner calls when a task ran out of deliveries. */
export class DeadLetterRecorder {
  constructor(
    private readonly store: DeadLetterStore,
    private readonly log: Logger,
  ) {}

  /** Never throws: a letter that cannot be stored is logged, and the task still ends with its error. */
  async add(
    task: AssembledTask,
    reason: DeadLetterReason,
    attempt: number,
    source: 'executor' | 'advisory' = 'executor',
    consumer?: string,
  ): Promise<void> {
    try {
      const stored = await this.store.add(
        deadLetterOf(task, {
          reason: { code: reason.code, message: reason.message },
          attempts: attempt,
          source,
          ...(consumer === undefined ? {} : { consumer }),
        }),
      );
      if (stored) this.log.warn({ attempt, code: reason.code }, 'task dead-lettered');
    } catch (error) {
      this.log.error({ err: error, attempt }, 'the dead letter of a task could not be stored');
    }
  }
}

/** Whether a durable consumer of MESH_TASKS is one of the executors' (`executor`, `executor-<classes>`). */
function isExecutorConsumer(name: string): boolean {
  const base = executorConsumer().durable_name;
  return name === base || name.startsWith(`${base}-`);
}

function isNotFound(error: unknown): boolean {
  return isJetStreamApiError(error, JetStreamApiCodes.NoMessageFound);
}

export interface DeadLetterListenerOptions {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TaskStatusStore;
  recorder: DeadLetterRecorder;
  log: Logger;
  /** Asks whether an attempt of the task still lives (attempt-owners.ts); none: never asked. */
  owners?: Pick<AttemptOwners, 'runs'>;
  /** How often a task left to a live attempt is checked again; 5 s by default. */
  sparedCheckMs?: number;
}

/** A task that ran out of deliveries while an attempt of it lived: watched until it ends. */
interface SparedTask {
  task: AssembledTask;
  advisory: MaxDeliveriesAdvisory;
  reason: DeadLetterReason;
}

const SPARED_CHECK_MS = 5_000;

export class DeadLetterListener {
  private constructor(
    private readonly subscription: Subscription,
    private readonly done: Promise<void>,
    private readonly spared: SparedTasks,
  ) {}

  static start(options: DeadLetterListenerOptions): DeadLetterListener {
    const spared = new SparedTasks(options);
    const subscription = options.nc.subscribe(taskMaxDeliveriesAdvisories(), { queue: LISTENER_QUEUE });
    const done = (async () => {
      for await (const message of subscription) {
        let advisory: MaxDeliveriesAdvisory;
        try {
          advisory = MaxDeliveriesAdvisory.parse(message.json());
        } catch (error) {
          options.log.warn({ err: error }, 'ignoring a MAX_DELIVERIES advisory that does not parse');
          continue;
        }
        if (advisory.stream !== Streams.TASKS.name || !isExecutorConsumer(advisory.consumer)) continue;
        try {
          await deadLetterFromAdvisory(options, advisory, spared);
        } catch (error) {
          options.log.error(
            { err: error, stream_seq: advisory.stream_seq },
            'a task that ran out of deliveries could not be dead-lettered; it stays in MESH_TASKS',
          );
        }
      }
    })();
    return new DeadLetterListener(subscription, done, spared);
  }

  /** Tasks left to a live attempt and still watched. */
  get watching(): number {
    return this.spared.size;
  }

  async stop(): Promise<void> {
    this.subscription.unsubscribe();
    await this.done;
    await this.spared.stop();
  }
}

/**
 * The tasks left to a live attempt after their deliveries ran out, checked on one timer: a task that ended
 * is forgotten; one whose attempt no longer lives (and that no other live attempt took over) is ended as
 * out of deliveries.
 */
class SparedTasks {
  readonly #tasks = new Map<string, SparedTask>();
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  constructor(private readonly options: DeadLetterListenerOptions) {}

  get size(): number {
    return this.#tasks.size;
  }

  add(spared: SparedTask): void {
    const { account_id: accountId, trace_id: traceId } = spared.task.task_meta;
    this.#tasks.set(`${accountId}.${traceId}`, spared);
    this.#timer ??= setInterval(() => {
      this.#checking ??= this.#checkAll().finally(() => (this.#checking = undefined));
    }, this.options.sparedCheckMs ?? SPARED_CHECK_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#checking;
  }

  async #checkAll(): Promise<void> {
    for (const [key, spared] of this.#tasks) {
      try {
        if (await this.#settled(spared)) this.#tasks.delete(key);
      } catch (error) {
        this.options.log.warn(
          { err: error },
          'a task left to a live attempt could not be checked; trying again',
        );
      }
    }
    if (this.#tasks.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** True when the task needs no more watching: it ended, or it is ended now. */
  async #settled({ task, advisory, reason }: SparedTask): Promise<boolean> {
    const { statuses, owners, log } = this.options;
    const { account_id: accountId, trace_id: traceId } = task.task_meta;
    const status = await statuses.get(accountId, traceId);
    if (status === undefined || isFinalTaskStatus(status.status)) return true;
    if (await attemptLives(status, owners, accountId, traceId)) {
      return false;
    }
    const taskLog = log.child({ trace_id: traceId, account_id: accountId });
    taskLog.warn('the attempt a task out of deliveries was left to is gone; ending the task');
    await endOutOfDeliveries({ ...this.options, log: taskLog }, task, advisory, reason);
    return true;
  }
}

/** Whether the instance a `running` record names says its attempt of the task still lives. */
async function attemptLives(
  record: TaskStatusRecord | undefined,
  owners: DeadLetterListenerOptions['owners'],
  accountId: string,
  traceId: string,
): Promise<boolean> {
  const owner = runningInstance(record);
  return owner !== undefined && owners !== undefined && (await owners.runs(owner, accountId, traceId));
}

/** Dead-letters the message an advisory names, ends its task and deletes the message. */
async function deadLetterFromAdvisory(
  { js, jsm, statuses, recorder, log, owners }: DeadLetterListenerOptions,
  advisory: MaxDeliveriesAdvisory,
  spared: SparedTasks,
): Promise<void> {
  const message = await jsm.streams
    .getMessage(Streams.TASKS.name, { seq: advisory.stream_seq })
    .catch((error: unknown) => {
      if (isNotFound(error)) return null;
      throw error;
    });
  // Acknowledged (and so removed) in the meantime, or handled by another listener already.
  if (message === null) return;
  if (parseTaskSubject(message.subject)?.stage !== 'assembled') return;
  const parsed = AssembledTask.safeParse(message.json());
  if (!parsed.success) {
    log.warn({ stream_seq: advisory.stream_seq }, 'a malformed task ran out of deliveries; left in place');
    return;
  }
  const task = parsed.data;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const taskLog = log.child({ trace_id: traceId, account_id: accountId });
  const reason = {
    code: ErrorCode.MAX_DELIVER_EXCEEDED,
    message: `the task was delivered ${advisory.deliveries} times and its last delivery was never acknowledged`,
  };
  // Deliveries left alone while an attempt of the task lived count toward JetStream's limit as well
  // (attempt-owners.ts): server stalls alone can run it out under a healthy attempt, which ends the task
  // itself. Its ack no longer removes the message (the server dropped it from the pending ones), so it is
  // deleted below all the same.
  if (await attemptLives(await statuses.get(accountId, traceId), owners, accountId, traceId)) {
    taskLog.warn(
      { deliveries: advisory.deliveries },
      'a task ran out of deliveries while an attempt of it lives; leaving the task to that attempt',
    );
    spared.add({ task, advisory, reason });
  } else {
    await endOutOfDeliveries({ js, jsm, statuses, recorder, log: taskLog }, task, advisory, reason);
  }
  await jsm.streams.deleteMessage(Streams.TASKS.name, advisory.stream_seq, false).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
}

/** Dead-letters the task and writes its MAX_DELIVER_EXCEEDED error event and status, unless it has ended. */
async function endOutOfDeliveries(
  { js, jsm, statuses, recorder, log: taskLog }: Omit<DeadLetterListenerOptions, 'nc' | 'owners'>,
  task: AssembledTask,
  advisory: MaxDeliveriesAdvisory,
  reason: DeadLetterReason,
): Promise<void> {
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  await recorder.add(task, reason, advisory.deliveries, 'advisory', advisory.consumer);

  const writer = await TaskEventWriter.open(js, jsm, {
    accountId,
    traceId,
    attempt: advisory.deliveries + 1,
  });
  if (writer.terminal === undefined) {
    const error = { ...reason, retryable: false };
    try {
      const terminal = await writer.emit(EventType.ERROR, error);
      await statuses.update(accountId, traceId, (current) =>
        current === undefined
          ? undefined
          : {
              ...current,
              status: TaskStatus.ERROR,
              attempt: advisory.deliveries,
              updated_at: new Date().toISOString(),
              last_seq: terminal.seq,
              error,
            },
      );
      taskLog.warn({ deliveries: advisory.deliveries }, 'task ended: its last delivery was never settled');
    } catch (error) {
      // Someone else wrote the task's events in between: their terminal event stands.
      if (!(error instanceof EventStreamConflictError)) throw error;
    }
  }
}
