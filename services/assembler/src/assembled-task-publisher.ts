/**
 * Publishes an assembled task for the executors, with the active trace context in its headers: to
 * `mesh.tasks.assembled.<account>` when its tools need no native class, and to
 * `mesh.tasks.assembled.<account>.<native classes>` otherwise, where only executors providing every one of
 * those classes read. `Nats-Msg-Id` = `<account>.<trace_id>:assembled`, so a redelivered received task
 * that is assembled again within the stream's duplicate window is stored once (and another account's
 * task with the same trace id is not mistaken for it). A try that got no answer is sent again with that
 * id (publishWithRetry of @agentmesh/bus), so it too is stored once.
 */
import { DEFAULT_PUBLISH_RETRY, encodeJson, publishWithRetry, type PublishRetry } from '@agentmesh/bus';
import { nativeClassesOf, taskAssembledSubject, taskKey, type AssembledTask } from '@agentmesh/protocol';
import { injectTraceContext } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';

/**
 * `<account>.<trace_id>:assembled`, or `…:assembled:redrive-<n>` for a task the gateway published again
 * after the queue lost it: a copy the stream would otherwise drop as a duplicate of the lost one.
 */
export function assembledTaskMsgId(accountId: string, traceId: string, redrive?: number): string {
  const id = `${taskKey(accountId, traceId)}:assembled`;
  return redrive === undefined ? id : `${id}:redrive-${redrive}`;
}

export class AssembledTaskPublisher {
  constructor(
    private readonly js: JetStreamClient,
    /** How a try that got no answer (NATS away, a reconnect) is sent again, with the same id. */
    private readonly retry: PublishRetry = DEFAULT_PUBLISH_RETRY,
  ) {}

  /**
   * Resolves once JetStream has stored it; `duplicate` when an earlier publish of the task had been (this
   * instance's own unanswered try included).
   */
  async publish(task: AssembledTask, redrive?: number): Promise<{ duplicate: boolean }> {
    const { account_id: accountId, trace_id: traceId } = task.task_meta;
    const subject = taskAssembledSubject(accountId, nativeClassesOf(task.runtime_config.tools));
    const { ack } = await publishWithRetry(
      this.js,
      subject,
      encodeJson(task),
      { msgID: assembledTaskMsgId(accountId, traceId, redrive), headers: injectTraceContext() },
      this.retry,
    );
    return { duplicate: ack.duplicate };
  }
}
