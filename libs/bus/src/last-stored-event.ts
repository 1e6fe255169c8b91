/**
 * The last message stored on one task's event subject: one message get (`last_by_subj`), answered from
 * the stream's per-subject index, so its cost does not grow with the tasks kept. The one read behind a
 * writer's fence, a task's terminal event and "has this task any event".
 */
import { Streams } from '@agentmesh/protocol';
import { JetStreamApiCodes, type JetStreamManager, type StoredMsg } from '@nats-io/jetstream';
import { isJetStreamApiError } from './jetstream-api-error.js';

/** The subject's last stored message in MESH_EVENTS, or null when none is stored. */
export async function getLastStoredEvent(jsm: JetStreamManager, subject: string): Promise<StoredMsg | null> {
  try {
    return await jsm.streams.getMessage(Streams.EVENTS.name, { last_by_subj: subject });
  } catch (error) {
    if (isJetStreamApiError(error, JetStreamApiCodes.NoMessageFound)) return null;
    throw error;
  }
}
