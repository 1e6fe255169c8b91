/**
 * What the executor does with an assembled-task message that is not a valid task: counts it by reason,
 * and, where its account (subject) and trace id (payload) can be read, ends the task with an
 * INVALID_REQUEST `error` event and status, so a client following the task sees its end.
 */
import { endMalformedTask, readMalformedTaskIdentity, type TaskStatusStore } from '@agentmesh/bus';
import { injectTraceContext, type Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { ExecutorMetrics } from './executor-metrics.js';
import type { MalformedTaskHandler } from './task-consumer.js';

export interface MalformedTaskEndingDependencies {
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TaskStatusStore;
  metrics: ExecutorMetrics;
  log: Logger;
}

export function endingMalformedTasks(deps: MalformedTaskEndingDependencies): MalformedTaskHandler {
  return async (message) => {
    const identity = readMalformedTaskIdentity(message.subject, message.data);
    if (identity !== undefined) {
      const ending = await endMalformedTask({
        js: deps.js,
        jsm: deps.jsm,
        statuses: deps.statuses,
        identity,
        problem: message.problem,
        attempt: message.attempt,
        headers: () => injectTraceContext(),
      });
      deps.log.info(
        { trace_id: identity.traceId, account_id: identity.accountId, reason: message.reason, ...ending },
        'ended the task of an invalid task message',
      );
    }
    // Counted once the message is dealt with, so a retried ending does not count twice.
    deps.metrics.malformedTasks.add(1, { reason: message.reason });
  };
}
