/**
 * Dead letters in the executor. `DeadLetterRecorder` copies a task that ran out of deliveries into
 * MESH_DEAD_LETTERS (called by the task runner where it writes MAX_DELIVER_EXCEEDED). `DeadLetterListener`
 * covers the case the runner never sees: the last delivery itself died (the executor was killed on it, or it
 * was handed back), so JetStream gives up on the message and sends its MAX_DELIVERIES advisory. The
 * listener reads the message by its stream sequence, dead-letters it, writes the task's MAX_DELIVER_EXCEEDED
 * `error` event and status if the task has no terminal event yet, and deletes the message, which a work
 * queue would otherwise keep (nats-server 2.9 leaves a message that exhausted its deliveries in the stream).
 *
 * The advisories are read from MESH_TASK_ADVISORIES, which stores them as the server sends them, through one
 * durable consumer shared by every executor (each advisory is handled by one instance). A core
 * subscription would miss every advisory sent while no executor was connected (a NATS restart, a
 * partition, every executor down), and the task it names would then say `running` for ever.
 *
 * The task's spend (its attempts' `step_finished` events) is added to its account's day when this listener
 * writes its terminal event, as an attempt's ending does: a task whose last delivery always dies still
 * counts toward the daily caps.
 *
 * Every step is idempotent (the letter is added once per task, the event writer's sequence check refuses a
 * second terminal event, a deleted message is not found), so a repeat of the work is harmless.
 *
 * A task whose deliveries ran out while an attempt of it still lives is left to that attempt: its advisory
 * is put off (a delayed nak) and looked at again until the task ends; if the attempt dies first, the task is
 * ended as out of deliveries (dead-lettered, re-drivable). Its message stays in MESH_TASKS until then, to be
 * read again. Being a message of a durable consumer, that watch survives the executor that kept it.
 */
import {
  deadLetterOf,
  type DeadLetterStore,
  EventStreamConflictError,
  isJetStreamApiError,
  runDurableConsumer,
  type RunningConsumer,
  TaskEventWriter,
  readTaskEventLog,
  type TaskStatusStore,
  type ThreadStore,
} from '@agentmesh/bus';
import {
  AdvisoryConsumers,
  AssembledTask,
  ErrorCode,
  EventType,
  executorConsumer,
  isFinalTaskStatus,
  parseTaskSubject,
  Streams,
  type DeadLetterReason,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import {
  JetStreamApiCodes,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { z } from 'zod';
import type { AttemptOwners } from './attempt-owners.js';
import { runningInstance } from './attempt-status.js';
import { AttemptStatusWrites } from './attempt/status-writes.js';
import { addSpendToAccountDay, type AccountDays } from './budget/account-day.js';
import { earlierSpendOf, type EarlierSpend } from './budget/task-spend.js';

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
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TaskStatusStore;
  recorder: DeadLetterRecorder;
  log: Logger;
  /** Asks whether an attempt of the task still lives (attempt-owners.ts); none: never asked. */
  owners?: Pick<AttemptOwners, 'runs'>;
  /** The threads a task that ends here frees; none: tasks without threads only. */
  threads?: ThreadStore;
  /** The accounts' days, which the spend of a task ended here is added to; none: not added. */
  accountUsage?: AccountDays;
  /** How long the advisory of a task left to a live attempt is put off before it is looked at again; 5 s by default. */
  sparedCheckMs?: number;
  /** How long an advisory that could not be handled (NATS trouble) is put off; 5 s by default. */
  retryMs?: number;
}

const SPARED_CHECK_MS = 5_000;
const RETRY_MS = 5_000;

/** What became of an advisory: handled for good, or to be looked at again later. */
type AdvisoryOutcome = 'handled' | 'spared';

export class DeadLetterListener {
  private constructor(private readonly consumer: RunningConsumer) {}

  static start(options: DeadLetterListenerOptions): DeadLetterListener {
    const { log } = options;
    const handle = async (message: JsMsg): Promise<void> => {
      let advisory: MaxDeliveriesAdvisory;
      try {
        advisory = MaxDeliveriesAdvisory.parse(message.json());
      } catch (error) {
        log.warn({ err: error }, 'dropping a MAX_DELIVERIES advisory that does not parse');
        message.term('malformed');
        return;
      }
      if (advisory.stream !== Streams.TASKS.name || !isExecutorConsumer(advisory.consumer)) {
        message.ack();
        return;
      }
      try {
        const outcome = await handleAdvisory(options, advisory, message.info.deliveryCount === 1);
        if (outcome === 'handled') message.ack();
        else message.nak(options.sparedCheckMs ?? SPARED_CHECK_MS);
      } catch (error) {
        log.error(
          { err: error, stream_seq: advisory.stream_seq },
          'a task that ran out of deliveries could not be dead-lettered yet; trying again',
        );
        message.nak(options.retryMs ?? RETRY_MS);
      }
    };
    const consumer = runDurableConsumer(
      options.js,
      options.jsm,
      {
        ...AdvisoryConsumers.DEAD_LETTERS,
        // Longer than handling one takes (a question to another instance, a few reads and writes).
        ackWaitMs: 30_000,
        batch: 16,
        // Advisories put off while their task's attempt lives are pending too.
        maxAckPending: 10_000,
      },
      handle,
      (error) =>
        log.warn({ err: error }, 'the consumer of MAX_DELIVERIES advisories failed; starting it again'),
    );
    return new DeadLetterListener(consumer);
  }

  async stop(): Promise<void> {
    await this.consumer.stop();
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

/**
 * Dead-letters the message an advisory names, ends its task and deletes the message; or, while an attempt
 * of the task lives and the task has not ended, leaves both to be looked at again.
 */
async function handleAdvisory(
  options: DeadLetterListenerOptions,
  advisory: MaxDeliveriesAdvisory,
  firstLook: boolean,
): Promise<AdvisoryOutcome> {
  const { jsm, statuses, log, owners } = options;
  const message = await jsm.streams
    .getMessage(Streams.TASKS.name, { seq: advisory.stream_seq })
    .catch((error: unknown) => {
      if (isNotFound(error)) return null;
      throw error;
    });
  // Acknowledged (and so removed) in the meantime, or handled by another listener already.
  if (message === null) return 'handled';
  if (parseTaskSubject(message.subject)?.stage !== 'assembled') return 'handled';
  const parsed = AssembledTask.safeParse(message.json());
  if (!parsed.success) {
    log.warn({ stream_seq: advisory.stream_seq }, 'a malformed task ran out of deliveries; left in place');
    return 'handled';
  }
  const task = parsed.data;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const taskLog = log.child({ trace_id: traceId, account_id: accountId });
  const status = await statuses.get(accountId, traceId);
  // Deliveries left alone while an attempt of the task lived count toward JetStream's limit as well
  // (attempt-owners.ts): server stalls alone can run it out under a healthy attempt, which ends the task
  // itself. Its ack no longer removes the message (the server dropped it from the pending ones), so the
  // message is deleted here once the task has ended.
  if (status === undefined || !isFinalTaskStatus(status.status)) {
    if (await attemptLives(status, owners, accountId, traceId)) {
      if (firstLook) {
        taskLog.warn(
          { deliveries: advisory.deliveries },
          'a task ran out of deliveries while an attempt of it lives; leaving the task to that attempt',
        );
      }
      return 'spared';
    }
    await endOutOfDeliveries({ ...options, log: taskLog }, task, advisory, {
      code: ErrorCode.MAX_DELIVER_EXCEEDED,
      message: `the task was delivered ${advisory.deliveries} times and its last delivery was never acknowledged`,
    });
  }
  await jsm.streams.deleteMessage(Streams.TASKS.name, advisory.stream_seq, false).catch((error: unknown) => {
    if (!isNotFound(error)) throw error;
  });
  return 'handled';
}

/**
 * Dead-letters the task and writes its MAX_DELIVER_EXCEEDED error event, unless it has ended; either way the
 * status record is made to say what the terminal event says (the attempt that stored it may have died, or
 * failed, before its final status write: on the last delivery nothing else would repair it).
 */
async function endOutOfDeliveries(
  options: DeadLetterListenerOptions,
  task: AssembledTask,
  advisory: MaxDeliveriesAdvisory,
  reason: DeadLetterReason,
): Promise<void> {
  const { js, jsm, recorder, log: taskLog } = options;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  const statusWrites = new AttemptStatusWrites(options, Date.now);
  const writer = await TaskEventWriter.open(js, jsm, {
    accountId,
    traceId,
    attempt: advisory.deliveries + 1,
  });
  const { terminal } = writer;
  if (terminal !== undefined) {
    // An attempt ended it out of deliveries and may have died before its letter (adding one is idempotent).
    if (terminal.type === EventType.ERROR && terminal.data.code === ErrorCode.MAX_DELIVER_EXCEEDED) {
      await recorder.add(task, reason, advisory.deliveries, 'advisory', advisory.consumer);
    }
    await statusWrites.recordFinal(task, terminal.attempt, terminal);
    return;
  }
  await recorder.add(task, reason, advisory.deliveries, 'advisory', advisory.consumer);
  try {
    const ended = await writer.emit(EventType.ERROR, { ...reason, retryable: false });
    await statusWrites.recordFinal(task, advisory.deliveries, ended);
    taskLog.warn({ deliveries: advisory.deliveries }, 'task ended: its last delivery was never settled');
    await addSpendToDay(options, task, ended.seq);
  } catch (error) {
    // Someone else wrote the task's events in between: their terminal event stands.
    if (!(error instanceof EventStreamConflictError)) throw error;
  }
}

/**
 * Adds what the task's attempts spent (their `step_finished` events, priced when they ran) to its account's
 * day, once this listener stored its terminal event (budget/account-day.ts).
 */
async function addSpendToDay(
  { jsm, accountUsage, log }: DeadLetterListenerOptions,
  task: AssembledTask,
  throughSeq: number,
): Promise<void> {
  if (accountUsage === undefined) return;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  let spent: EarlierSpend;
  try {
    spent = earlierSpendOf(await readTaskEventLog(jsm, { accountId, traceId, throughSeq }));
  } catch (error) {
    log.error({ err: error }, "could not read the task's spend for its account's day");
    return;
  }
  const spend = { totalTokens: spent.usage.total_tokens, costUsd: spent.costUsd };
  await addSpendToAccountDay(accountUsage, accountId, spend, { now: new Date(), log });
}
