/**
 * One stored message read by a message get: by sequence, or the last (or next) one of a subject, answered
 * from the stream's per-subject index, so its cost does not grow with the messages kept. "No such message"
 * is an answer here (null), not an error: servers before 2.10 send it as `NoMessageFound`, nats.js 3 as
 * null.
 */
import { Streams } from '@agentmesh/protocol';
import {
  JetStreamApiCodes,
  type JetStreamManager,
  type MsgRequest,
  type StoredMsg,
} from '@nats-io/jetstream';
import { isJetStreamApiError } from './jetstream-api-error.js';

/** The message `query` names in `stream`, or null when there is none. */
export async function getStoredMessage(
  jsm: JetStreamManager,
  stream: string,
  query: MsgRequest,
): Promise<StoredMsg | null> {
  try {
    return await jsm.streams.getMessage(stream, query);
  } catch (error) {
    if (isJetStreamApiError(error, JetStreamApiCodes.NoMessageFound)) return null;
    throw error;
  }
}

/**
 * The last message stored on one task's event subject in MESH_EVENTS, or null when none is: the read
 * behind a writer's fence, a task's terminal event and "has this task any event".
 */
export function getLastStoredEvent(jsm: JetStreamManager, subject: string): Promise<StoredMsg | null> {
  return getStoredMessage(jsm, Streams.EVENTS.name, { last_by_subj: subject });
}
