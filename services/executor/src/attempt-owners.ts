/**
 * Whether another attempt of a task is alive: the fence that keeps a delivery from starting a task's work
 * again while the attempt that runs it lives. nats-server redelivers a task whose in-progress acks it has
 * not heard for ack_wait, which happens to a healthy attempt when the server itself stalls (seen: one 6 s
 * stall delivered a task four times within 0.3 s while its first attempt ran; each delivery resumed it,
 * reran its tool and counted as a work attempt, and the task was dead-lettered).
 *
 * The status record names the executor instance of the attempt that wrote `running` (`executor_instance`,
 * a random token per process). A delivery of a task whose record says it runs on another instance asks that
 * instance on `mesh.control.attempts.<instance>` (core NATS request/reply) whether it still runs a live
 * attempt of the task, and does nothing if it does. The question costs nothing per task or per second: it
 * is asked only by a redelivery that finds the task running elsewhere. A killed instance has no
 * subscription (the server answers "no responders" at once), so a takeover after a crash is not slowed; a
 * frozen one does not answer, and the takeover waits for the question's time-out (one heartbeat period).
 */
import { decodeJson, encodeJson } from '@agentmesh/bus';
import { AttemptQuery, AttemptReply, executorAttemptsSubject } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import type { RunningTasks } from './running-tasks.js';

export interface AttemptOwnersOptions {
  nc: NatsConnection;
  running: RunningTasks;
  /** How long an instance has to answer before it counts as gone (the heartbeat period). */
  timeoutMs: number;
  log: Logger;
  /** This process's token; a fresh random one by default. */
  instance?: string;
}

export class AttemptOwners {
  private constructor(
    /** This executor process's token, as its `running` records name it. */
    readonly instance: string,
    private readonly options: AttemptOwnersOptions,
    private readonly subscription: Subscription,
  ) {}

  /** Answers the questions about this instance's attempts until {@link stop}. */
  static async start(options: AttemptOwnersOptions): Promise<AttemptOwners> {
    const instance = options.instance ?? randomBytes(8).toString('hex');
    const { nc, running, log } = options;
    const subscription = nc.subscribe(executorAttemptsSubject(instance), {
      callback: (error, msg) => {
        if (error) return;
        try {
          const query = decodeJson(AttemptQuery, msg.data, msg.subject);
          const reply: AttemptReply = { running: running.runsLive(query.account_id, query.trace_id) };
          msg.respond(encodeJson(reply));
        } catch (failure) {
          log.warn({ err: failure }, 'ignoring a malformed attempt query');
        }
      },
    });
    // The subscription is known to the server before any record names this instance.
    await nc.flush();
    return new AttemptOwners(instance, options, subscription);
  }

  /**
   * Whether `owner` runs a live attempt of the task now. This instance answers from its own running tasks;
   * another that does not answer in time, or has no subscription (gone), does not.
   */
  async runs(owner: string, accountId: string, traceId: string): Promise<boolean> {
    if (owner === this.instance) return this.options.running.runsLive(accountId, traceId);
    const query: AttemptQuery = { account_id: accountId, trace_id: traceId };
    try {
      const reply = await this.options.nc.request(executorAttemptsSubject(owner), encodeJson(query), {
        timeout: this.options.timeoutMs,
      });
      return decodeJson(AttemptReply, reply.data, 'attempt reply').running;
    } catch {
      // No responders (its process is gone), a time-out (frozen, or too slow to heartbeat either), or a
      // reply that is no answer: nobody is known to run the task.
      return false;
    }
  }

  async stop(): Promise<void> {
    this.subscription.unsubscribe();
  }
}
