/**
 * One core-NATS subscription to every task's cancel subject. A CancelSignal for a task this instance is
 * running aborts that attempt (reason CANCELLED); signals for other tasks are ignored, since a task that
 * has not started yet finds `cancel_requested_at` in its status record instead.
 */
import { decodeCancelSignal } from '@agentmesh/bus';
import { Wildcards } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { RunningTasks } from './running-tasks.js';

export class CancelListener {
  private constructor(private readonly subscription: Subscription) {}

  static start(nc: NatsConnection, running: RunningTasks, log: Logger): CancelListener {
    const subscription = nc.subscribe(Wildcards.ALL_CANCELS, {
      callback: (error, msg) => {
        if (error) {
          log.warn({ err: error }, 'cancel subscription failed');
          return;
        }
        const signal = decodeCancelSignal(msg.subject, msg.data);
        if (signal === undefined) {
          log.warn({ subject: msg.subject }, 'ignored a malformed cancel signal');
          return;
        }
        if (running.cancel(signal.account_id, signal.trace_id, signal.reason)) {
          log.info({ trace_id: signal.trace_id }, 'cancelling running task');
        }
      },
    });
    return new CancelListener(subscription);
  }

  async stop(): Promise<void> {
    await this.subscription.drain();
  }
}
