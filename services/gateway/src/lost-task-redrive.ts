/**
 * The JetStream side of the lost-task watch (lost-task-watch.ts): whether a task's received message is
 * still in MESH_TASKS, and publishing a lost one again under its re-drive's message id.
 */
import { getStoredMessage, publishWithRetry } from '@agentmesh/bus';
import { redrivenTaskMsgId, Streams, taskReceivedSubject } from '@agentmesh/protocol';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { WatchedTask } from './lost-task-watch.js';

/** Re-drives of one task at most: a queue that loses the same task this often is not recovering. */
export const LOST_TASK_MAX_REDRIVES = 3;

/** Whether MESH_TASKS still holds the message stored at `seq` (a work queue drops it once acknowledged). */
export async function isStillQueued(jsm: JetStreamManager, seq: number): Promise<boolean> {
  return (await getStoredMessage(jsm, Streams.TASKS.name, { seq })) !== null;
}

/** Publishes the task's received message again (re-drive `n`); resolves to its stream sequence. */
export async function redriveTask(js: JetStreamClient, task: WatchedTask, n: number): Promise<number> {
  const { ack } = await publishWithRetry(js, taskReceivedSubject(task.accountId), task.message, {
    // No trace context: the assembler's span joins the task's trace from its trace id.
    msgID: redrivenTaskMsgId(task.accountId, task.traceId, n),
  });
  return ack.seq;
}
