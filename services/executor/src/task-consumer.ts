/**
 * The executors' share of MESH_TASKS: one durable pull consumer per set of native tool classes a task may
 * need (`executor` for tasks needing none, `executor-<classes>` otherwise; each shared by every instance
 * that has those classes), and this instance's loops over those it can serve: every subset of its own
 * classes. So a task needing `execute_script` only reaches an executor with a scripts directory, and
 * tasks needing nothing special spread over all of them. The loops share this instance's slots and pull
 * only as many tasks as are free, so nothing waits in a local buffer while its ack_wait runs; each task in
 * flight gets an in-progress ack every ACK_PROGRESS_MS and is acked once its terminal event is published.
 * One timer per consumer sends the in-progress acks of every task in flight (not a timer per task), and
 * tells the executor's heartbeat clock when it ticked, so attempts learn of a stall of the process.
 *
 * Stopping: the loop stops pulling (the pull already open runs out, and a task that still arrives on it
 * is nak'ed straight back), running tasks get the grace period to finish, and those still running after
 * it are handed back: their attempt is aborted without a terminal event and their message nak'ed, so
 * another instance starts them afresh (counting one more delivery).
 *
 * A message that is not a valid task is terminated, after `onMalformed` has ended the task it names.
 */
import { MalformedTaskReason } from '@agentmesh/bus';
import { AssembledTask, describeZodError, executorConsumer, parseTaskSubject } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  ReplayPolicy,
  type Consumer,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HeartbeatClock } from './heartbeat-clock.js';
import { LendableTaskSlot, type SlotLedger } from './task-slot.js';
import { AttemptDisposition, deliveryBackstop, type Delivery } from './task-runner.js';

export interface ExecutorConsumerSettings {
  /** Attempts that did work a task gets (see TaskRunner); the consumer's limit is larger (`maxDeliveries`). */
  maxDeliver: number;
  /**
   * The consumer's `max_deliver`, a backstop for tasks whose deliveries die before any work (those do
   * not count toward `maxDeliver`); 2 × maxDeliver + 1 by default.
   */
  maxDeliveries?: number;
  ackWaitMs: number;
  /** Unacknowledged tasks across every instance. */
  maxAckPending: number;
}

/** Beyond this many native classes the consumers of every subset (2^n) would be too many to pull from. */
export const MAX_ROUTED_NATIVE_CLASSES = 6;

/** Every subset of `classNames`, the empty one first: the class sets of the tasks an executor can run. */
export function servableClassSets(classNames: readonly string[]): string[][] {
  const classes = [...new Set(classNames)].sort();
  if (classes.length > MAX_ROUTED_NATIVE_CLASSES) {
    throw new RangeError(
      `an executor routes tasks for at most ${MAX_ROUTED_NATIVE_CLASSES} native classes, not ${classes.length}`,
    );
  }
  const sets: string[][] = [];
  for (let mask = 0; mask < 1 << classes.length; mask++) {
    sets.push(classes.filter((_, index) => (mask & (1 << index)) !== 0));
  }
  return sets.sort((a, b) => a.length - b.length);
}

/**
 * Creates the shared durable consumer of the tasks needing exactly `nativeClasses`, or brings an existing
 * one to these settings.
 */
export async function ensureExecutorConsumer(
  jsm: JetStreamManager,
  settings: ExecutorConsumerSettings,
  nativeClasses: readonly string[] = [],
): Promise<void> {
  const { stream, durable_name, filter_subject } = executorConsumer(nativeClasses);
  const tunable = {
    ack_wait: nanos(settings.ackWaitMs),
    max_deliver: settings.maxDeliveries ?? deliveryBackstop(settings.maxDeliver),
    max_ack_pending: settings.maxAckPending,
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
        replay_policy: ReplayPolicy.Instant,
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

/** Runs one attempt of a valid task; resolves with what its message gets. */
export type AttemptHandler = (task: AssembledTask, delivery: Delivery) => Promise<AttemptDisposition>;

/** A task message that is not a valid task, as the consumer saw it. */
export interface MalformedTaskMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly attempt: number;
  readonly reason: MalformedTaskReason;
  /** Paths and reasons only, never payload values. */
  readonly problem: string;
}

/**
 * Ends the task a malformed message names, where it can be told; the message is terminated once this
 * resolves, and handed back (to try again) when it rejects.
 */
export type MalformedTaskHandler = (message: MalformedTaskMessage) => Promise<void>;

export interface TaskConsumerOptions {
  /** The durable consumers (already ensured) this instance pulls from. */
  durableNames: readonly string[];
  /** Tasks this instance runs at once. */
  maxConcurrent: number;
  /**
   * Slots lent out at most by tasks waiting for their sub-tasks (task-slot.ts); 0: a waiting task keeps its
   * slot. Tasks in flight stay under maxConcurrent + this.
   */
  maxWaiting?: number;
  ackProgressMs: number;
  /** How long `stop` lets running tasks finish before handing them back. */
  stopGraceMs: number;
  /** Aborts every running attempt so it ends without a terminal event (see `stop`). */
  handBackAll: () => void;
  /** How long one pull waits for tasks before asking again; a stopping consumer waits this long at most. */
  pullExpiresMs: number;
  /**
   * Pause after a failed pull (NATS away, consumer missing), and the first wait before a failed attempt's
   * task is delivered again (doubling with each delivery, failedAttemptRetryDelayMs). Default 1 s.
   */
  retryDelayMs?: number;
  /** Told of every heartbeat tick (heartbeat-clock.ts). */
  clock?: HeartbeatClock;
  /** Called for each malformed task message before it is terminated. */
  onMalformed?: MalformedTaskHandler;
  /** How long a task handed back for a vault key this instance lacks waits before its next delivery. */
  handBackLaterMs: number;
}

export class TaskConsumer {
  #stopping = false;
  readonly #inFlight = new Set<Promise<void>>();
  /** The messages of the attempts running now: what each heartbeat tick acks as in progress. */
  readonly #working = new Set<JsMsg>();
  #heartbeat: NodeJS.Timeout | undefined;
  /** Slots promised to pulls that are open: a loop pulls only what is neither running nor promised. */
  #reserved = 0;
  /** Slots lent out by running tasks that wait for their sub-tasks (task-slot.ts). */
  #lent = 0;
  readonly #ledger: SlotLedger = {
    lend: () => {
      if (this.#lent >= (this.options.maxWaiting ?? 0)) return false;
      this.#lent++;
      this.#grantSlots();
      return true;
    },
    reclaim: () => {
      this.#lent--;
    },
  };
  /** Loops waiting for slots, served in turn so one busy consumer never starves the others. */
  readonly #slotQueue: Array<{ grant: (promised: number) => void; most: number }> = [];
  /** A fair share of the slots per pull, so one idle pull never holds them all while another has tasks. */
  readonly #share: number;
  /**
   * What a pull asks for after one that was not filled. An open pull cannot be cut short (see #pullLoop), so
   * with several consumers an idle one would hold its share of the slots until it expires while a burst
   * waits on another: an idle pull holds one slot, and a pull that was filled asks for its share again.
   */
  readonly #idleBatch: number;
  readonly #wakeOnStop = new AbortController();
  #loop: Promise<void> = Promise.resolve();
  #stopped: Promise<void> = Promise.resolve();

  private constructor(
    private readonly js: JetStreamClient,
    private readonly handle: AttemptHandler,
    private readonly options: TaskConsumerOptions,
    private readonly log: Logger,
  ) {
    this.#share = Math.max(1, Math.ceil(options.maxConcurrent / options.durableNames.length));
    this.#idleBatch = options.durableNames.length > 1 ? 1 : this.#share;
  }

  /** Starts pulling tasks from the (already ensured) executor consumers. */
  static start(
    js: JetStreamClient,
    handle: AttemptHandler,
    options: TaskConsumerOptions,
    log: Logger,
  ): TaskConsumer {
    const consumer = new TaskConsumer(js, handle, options, log);
    // Unref'd: the tasks in flight, not this timer, keep the process busy.
    consumer.#heartbeat = setInterval(() => consumer.#beat(), options.ackProgressMs).unref();
    consumer.#loop = Promise.all(options.durableNames.map((name) => consumer.#pullLoop(name))).then(() => {});
    return consumer;
  }

  /** Tasks running now (those waiting for sub-tasks with their slots lent out included). */
  get running(): number {
    return this.#inFlight.size;
  }

  /** Slots lent out now by tasks waiting for their sub-tasks. */
  get lent(): number {
    return this.#lent;
  }

  async stop(): Promise<void> {
    if (this.#stopping) return this.#stopped;
    this.#stopping = true;
    this.#wakeOnStop.abort();
    this.#grantSlots();
    this.#stopped = this.#drain();
    return this.#stopped;
  }

  async #drain(): Promise<void> {
    try {
      const running = Promise.all(this.#inFlight);
      const [finished] = await Promise.all([settlesWithin(running, this.options.stopGraceMs), this.#loop]);
      if (finished) return;
      this.log.warn(
        { running: this.#inFlight.size },
        'handing running tasks back: the shutdown grace period is over',
      );
      this.options.handBackAll();
      await running;
    } finally {
      clearInterval(this.#heartbeat);
    }
  }

  /** One tick: every running task's delivery is acked as in progress, and the clock hears of the tick. */
  #beat(): void {
    this.options.clock?.beat();
    for (const msg of this.#working) msg.working();
  }

  async #pullLoop(durableName: string): Promise<void> {
    const stream = executorConsumer().stream;
    let consumer: Consumer | undefined;
    let batch = this.#idleBatch;
    while (!this.#stopping) {
      const promised = await this.#reserveSlots(batch);
      if (this.#stopping || promised === 0) {
        this.#reserved -= promised;
        break;
      }
      let unused = promised;
      try {
        consumer ??= await this.js.consumers.get(stream, durableName);
        if (this.#stopping) break;
        // Never closed early: the server keeps an abandoned pull open until it expires and would hand it
        // tasks nobody reads (they would wait out ack_wait). A stopping loop reads on and naks them instead.
        const messages = await consumer.fetch({
          max_messages: promised,
          expires: this.options.pullExpiresMs,
        });
        for await (const msg of messages) {
          if (unused > 0) {
            unused--;
            this.#reserved--;
          }
          if (this.#stopping) msg.nak();
          else this.#dispatch(msg);
        }
      } catch (error) {
        if (this.#stopping) break;
        this.log.warn({ err: error, consumer: durableName }, 'pulling tasks failed; retrying');
        this.#reserved -= unused;
        unused = 0;
        this.#grantSlots();
        await sleep(this.options.retryDelayMs ?? 1_000, undefined, { signal: this.#wakeOnStop.signal }).catch(
          () => {},
        );
      } finally {
        batch = unused === 0 ? this.#share : this.#idleBatch;
        this.#reserved -= unused;
        if (unused > 0) this.#grantSlots();
      }
    }
  }

  /** Waits its turn for a free slot, then promises up to `most` of the free slots to a pull; 0 once stopping. */
  #reserveSlots(most: number): Promise<number> {
    return new Promise((resolve) => {
      this.#slotQueue.push({ grant: resolve, most });
      this.#grantSlots();
    });
  }

  /** Hands free slots to the waiting loops in their order (and 0 to each once stopping). */
  #grantSlots(): void {
    while (this.#slotQueue.length > 0) {
      if (this.#stopping) {
        this.#slotQueue.shift()?.grant(0);
        continue;
      }
      const free = this.options.maxConcurrent - (this.#inFlight.size - this.#lent) - this.#reserved;
      if (free <= 0) return;
      const waiting = this.#slotQueue.shift();
      if (waiting === undefined) return;
      const promised = Math.min(free, waiting.most);
      this.#reserved += promised;
      waiting.grant(promised);
    }
  }

  #dispatch(msg: JsMsg): void {
    const running = this.#process(msg).finally(() => {
      this.#inFlight.delete(running);
      this.#grantSlots();
    });
    this.#inFlight.add(running);
  }

  async #process(msg: JsMsg): Promise<void> {
    const task = decodeTask(msg);
    if ('problem' in task) {
      // The payload may hold anything, so only where it came from and why it was refused are logged.
      this.log.warn(
        { subject: msg.subject, stream_seq: msg.seq, reason: task.reason, problem: task.problem },
        'terminating an invalid task message',
      );
      try {
        await this.options.onMalformed?.({
          subject: msg.subject,
          data: msg.data,
          attempt: msg.info.deliveryCount,
          ...task,
        });
      } catch (error) {
        // The consumer's max_deliver bounds these retries.
        this.log.error({ err: error, subject: msg.subject }, 'could not end the task of an invalid message');
        msg.nak(this.options.retryDelayMs ?? 1_000);
        return;
      }
      // No reason text: servers before 2.10.4 take `+TERM <reason>` for an unknown ack and redeliver.
      msg.term();
      return;
    }
    this.#working.add(msg);
    try {
      const disposition = await this.handle(task, {
        attempt: msg.info.deliveryCount,
        headers: msg.headers,
        slot: new LendableTaskSlot(this.#ledger),
      });
      settle(msg, disposition, this.options.handBackLaterMs);
    } catch (error) {
      const delayMs = failedAttemptRetryDelayMs(msg.info.deliveryCount, this.options.retryDelayMs ?? 1_000);
      this.log.error(
        { err: error, trace_id: task.task_meta.trace_id, retry_in_ms: delayMs },
        'task attempt failed; it will be redelivered',
      );
      msg.nak(delayMs);
    } finally {
      this.#working.delete(msg);
    }
  }
}

/** The longest wait before a failed attempt's task is delivered again. */
export const FAILED_ATTEMPT_RETRY_CAP_MS = 30_000;

/**
 * How long the task of an attempt that failed (threw: JetStream unavailable during a leader election, a
 * status write timing out) waits before its next delivery: doubling from `baseMs` with each delivery, up
 * to {@link FAILED_ATTEMPT_RETRY_CAP_MS}. A fixed 1 s spent the consumer's whole delivery backstop in a few
 * seconds of a NATS node's fault and dead-lettered healthy tasks; doubling rides out a minute of it.
 */
export function failedAttemptRetryDelayMs(deliveryCount: number, baseMs: number): number {
  const doublings = Math.max(0, Math.min(deliveryCount - 1, 16));
  return Math.min(baseMs * 2 ** doublings, FAILED_ATTEMPT_RETRY_CAP_MS);
}

function settle(msg: JsMsg, disposition: AttemptDisposition, handBackLaterMs: number): void {
  switch (disposition) {
    case AttemptDisposition.ACK:
      return msg.ack();
    case AttemptDisposition.TERM:
      return msg.term();
    case AttemptDisposition.HAND_BACK:
      return msg.nak();
    case AttemptDisposition.HAND_BACK_LATER:
      return msg.nak(handBackLaterMs);
    case AttemptDisposition.ABANDON:
      // Another executor owns the task's event stream and will ack the message itself.
      return;
  }
}

type Refusal = { reason: MalformedTaskReason; problem: string };

/** The task, or why the message is not one. */
function decodeTask(msg: JsMsg): AssembledTask | Refusal {
  const subject = parseTaskSubject(msg.subject);
  if (subject?.stage !== 'assembled') {
    return { reason: MalformedTaskReason.SUBJECT, problem: `not an assembled-task subject: ${msg.subject}` };
  }
  let body: unknown;
  try {
    body = msg.json();
  } catch {
    return { reason: MalformedTaskReason.NOT_JSON, problem: 'the payload is not JSON' };
  }
  const parsed = AssembledTask.safeParse(body);
  if (!parsed.success) {
    // Paths only: zod messages are safe, but nothing of the payload's values goes to the log.
    const paths = describeZodError(parsed.error).detail.issues.map((issue) => issue.path || '(root)');
    return {
      reason: MalformedTaskReason.SCHEMA,
      problem: `the payload is not an AssembledTask (${[...new Set(paths)].slice(0, 10).join(', ')})`,
    };
  }
  if (parsed.data.task_meta.account_id !== subject.accountId) {
    return {
      reason: MalformedTaskReason.ACCOUNT_MISMATCH,
      problem: `task_meta.account_id does not match the subject's account ${subject.accountId}`,
    };
  }
  return parsed.data;
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise.then(() => true),
      sleep(ms, false, { signal: timer.signal }).catch(() => false),
    ]);
  } finally {
    timer.abort();
  }
}
