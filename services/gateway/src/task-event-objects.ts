/**
 * A task's events as objects for the OpenAI-compatible façade and the MCP server, from the same follower the SSE endpoint
 * uses (the gateway's live feed, or JetStream when the feed does not cover the task): each event once,
 * in `seq` order, ending after the terminal event. The follower hands out SSE frames formatted once for
 * every reader of a task; the event is the frame's one `data:` line.
 */
import type { TaskEvent } from '@agentmesh/protocol';
import { followTaskEventFrames, type FollowTaskEventFramesOptions } from './task-event-follower.js';

export async function* followTaskEventObjects(
  options: FollowTaskEventFramesOptions,
): AsyncGenerator<TaskEvent> {
  for await (const frame of followTaskEventFrames(options)) yield eventOfFrame(frame);
}

const DATA_FIELD = '\ndata: ';

/** The event of a frame made by `formatSseEvent` (its JSON has no line break: one `data:` line). */
export function eventOfFrame(frame: string): TaskEvent {
  const start = frame.indexOf(DATA_FIELD);
  if (start < 0) throw new Error('an event frame without data');
  // Validated when the feed or the stream reader took it in.
  return JSON.parse(frame.slice(start + DATA_FIELD.length)) as TaskEvent;
}
