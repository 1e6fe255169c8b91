/**
 * The load of a chaos run: N concurrent clients, each submitting a task over HTTP (to either gateway,
 * the other one when the first fails) and waiting for its terminal event before the next. The client
 * chooses the trace id and an idempotency key, so a submission whose answer was lost is sent again
 * with both unchanged, and the gateway runs it once. A live subscription to the account's events tells
 * the clients when their task ended; the judgement itself is made later from the stored log.
 *
 * Every task is also followed as a tenant is told to follow one on NATS (`CoreFollowers`): a core
 * subscription to its `mesh.events.<account>.<trace_id>`, made before the submit; what it received is
 * judged against the stored log.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { accountEventsWildcard, TaskEvent, taskEventsSubject } from '@agentmesh/protocol';
import { userText } from './chaos-workload.js';
import type { FollowedTask } from './ledger/ledger-checks.js';

/**
 * One core-NATS subscriber per task, made (and confirmed by the server) before the task is submitted,
 * recording what arrives in order; and the times its connection was down, which explain what it missed.
 */
export class CoreFollowers {
  readonly #received = new Map<string, TaskEvent[]>();
  readonly #since = new Map<string, number>();
  readonly #endedAt = new Map<string, number>();
  readonly #subscriptions: Subscription[] = [];
  readonly #outages: Array<{ from: number; to: number }> = [];
  #downSince: number | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly accountId: string,
  ) {
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'disconnect' && this.#downSince === undefined) this.#downSince = Date.now();
        if (status.type === 'reconnect' && this.#downSince !== undefined) {
          this.#outages.push({ from: this.#downSince, to: Date.now() });
          this.#downSince = undefined;
        }
      }
    })();
  }

  /** Subscribes to the task's followed subject; resolves once the server has the subscription. */
  async follow(traceId: string): Promise<void> {
    const received: TaskEvent[] = [];
    this.#received.set(traceId, received);
    this.#since.set(traceId, Date.now());
    this.#subscriptions.push(
      this.nc.subscribe(taskEventsSubject(this.accountId, traceId), {
        callback: (error, message) => {
          if (error) return;
          let raw: unknown;
          try {
            raw = message.json();
          } catch {
            raw = { unparsable: message.string() };
          }
          const parsed = TaskEvent.safeParse(raw);
          // Not a valid event: kept as it came, so it counts as one the store does not have.
          received.push(parsed.success ? parsed.data : (raw as TaskEvent));
          if (parsed.success && (parsed.data.type === 'done' || parsed.data.type === 'error'))
            this.#endedAt.set(traceId, Date.now());
        },
      }),
    );
    // While the connection is down the subscription is sent on reconnect; that window is an outage.
    await this.nc.flush().catch(() => undefined);
  }

  /**
   * What each followed task's subscriber received, and whether its connection was down meanwhile, or a
   * NATS node was (`natsOutages`: a paused server holds its clients' connections open while routed
   * messages back up, so a follower may lose some without ever seeing a disconnect).
   */
  followed(natsOutages: ReadonlyArray<{ from: number; to: number }> = []): Map<string, FollowedTask> {
    const now = Date.now();
    const outages = [
      ...this.#outages,
      ...natsOutages,
      ...(this.#downSince === undefined ? [] : [{ from: this.#downSince, to: now }]),
    ];
    return new Map(
      [...this.#received].map(([traceId, events]) => {
        const from = this.#since.get(traceId) ?? 0;
        const to = this.#endedAt.get(traceId) ?? now;
        const disconnected = outages.some((outage) => outage.from <= to && outage.to >= from);
        return [traceId, { events: [...events], disconnected }];
      }),
    );
  }

  close(): void {
    for (const subscription of this.#subscriptions) subscription.unsubscribe();
  }
}

export interface SubmittedTask {
  index: number;
  traceId: string;
  /** When it was first sent. */
  submittedAt: number;
  /** A 2xx answer came back. */
  accepted: boolean;
  /** Submission attempts (1 when the first was answered). */
  sends: number;
  /** Why it was given up, when it was. */
  refusal?: string;
}

/** Tells waiters when a task's terminal event goes by on the bus. */
export class TerminalWatcher {
  readonly #ended = new Set<string>();
  readonly #waiters = new Map<string, () => void>();

  constructor(nc: NatsConnection, accountId: string) {
    const subscription = nc.subscribe(accountEventsWildcard(accountId));
    void (async () => {
      for await (const message of subscription) {
        let event: { trace_id?: unknown; type?: unknown };
        try {
          event = message.json();
        } catch {
          continue;
        }
        if ((event.type === 'done' || event.type === 'error') && typeof event.trace_id === 'string') {
          this.#ended.add(event.trace_id);
          this.#waiters.get(event.trace_id)?.();
        }
      }
    })();
  }

  ended(traceId: string): boolean {
    return this.#ended.has(traceId);
  }

  /** Resolves when the task's terminal event was seen, or after `timeoutMs` (a missed one is not fatal). */
  async waitFor(traceId: string, timeoutMs: number): Promise<boolean> {
    if (this.#ended.has(traceId)) return true;
    const ended = new Promise<boolean>((resolve) => this.#waiters.set(traceId, () => resolve(true)));
    const result = await Promise.race([ended, sleep(timeoutMs).then(() => false)]);
    this.#waiters.delete(traceId);
    return result || this.#ended.has(traceId);
  }
}

export interface LoadPlan {
  gatewayUrls: readonly string[];
  apiKey: string;
  workflowId: string;
  runId: string;
  clients: number;
  /** Tasks submitted at least. */
  tasks: number;
  /** Clients go on submitting while this says so, even past `tasks`. */
  keepGoing: () => boolean;
  /** Longest a client waits for its task's end before the next submission. */
  taskWaitMs: number;
  /** Longest a submission is retried. */
  submitRetryMs: number;
  /** Follows each task on core NATS from before its submit, when given. */
  followers?: CoreFollowers;
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);

/** Runs the clients; every task is pushed to `submitted` as soon as its submission is settled. */
export async function runLoad(
  plan: LoadPlan,
  watcher: TerminalWatcher,
  submitted: SubmittedTask[] = [],
): Promise<SubmittedTask[]> {
  let next = 0;

  const submit = async (index: number): Promise<SubmittedTask> => {
    const traceId = randomBytes(16).toString('hex');
    // Subscribe first, then submit: the recipe that loses nothing.
    await plan.followers?.follow(traceId);
    const task: SubmittedTask = { index, traceId, submittedAt: Date.now(), accepted: false, sends: 0 };
    const body = JSON.stringify({
      workflow_id: plan.workflowId,
      user_id: 'chaos',
      messages: [{ role: 'user', content: userText(index, traceId) }],
      idempotency_key: `chaos-${plan.runId}-${index}`,
      trace_id: traceId,
    });
    const deadline = task.submittedAt + plan.submitRetryMs;
    let lastProblem = '';
    for (let delay = 200; Date.now() < deadline; delay = Math.min(delay * 2, 2_000)) {
      const gateway = plan.gatewayUrls[(index + task.sends) % plan.gatewayUrls.length]!;
      task.sends += 1;
      try {
        const response = await fetch(`${gateway}/v1/tasks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${plan.apiKey}`, 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(15_000),
        });
        const text = await response.text();
        if (response.ok) {
          task.accepted = true;
          return task;
        }
        lastProblem = `${response.status} ${text.slice(0, 200)}`;
        const retryable = RETRYABLE_STATUS.has(response.status) || /"retryable"\s*:\s*true/.test(text);
        if (!retryable) break;
      } catch (error) {
        // Refused connection (a killed gateway), reset or timeout: the same key goes to the other gateway.
        lastProblem = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      }
      await sleep(delay);
    }
    task.refusal = lastProblem;
    return task;
  };

  await Promise.all(
    Array.from({ length: plan.clients }, async () => {
      while (next < plan.tasks || plan.keepGoing()) {
        const index = next++;
        const task = await submit(index);
        submitted.push(task);
        if (task.accepted) await watcher.waitFor(task.traceId, plan.taskWaitMs);
      }
    }),
  );
  return submitted;
}
