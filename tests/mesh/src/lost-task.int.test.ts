/**
 * A task whose message the task queue lost (what nats-server 2.9 can do after a node fault; done here by
 * deleting the assembled message while no executor runs) is published again by the gateway that
 * accepted it, assembled again under its re-drive id (its first assembled id is still in the stream's
 * duplicate window), and runs to `done` once.
 */
import { Streams } from '@agentmesh/protocol';
import { startScriptedModel, waitFor, type ScriptedModel } from '@agentmesh/testkit';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: 'answered after the re-drive' }) });
  mesh = await startMesh({
    executors: 1,
    env: { gateway: { LOST_TASK_REDRIVE_AFTER_MS: '1500', LOST_TASK_CHECK_MS: '1000' } },
  });
  await storeModelKey(mesh);
  await admin(mesh, 'POST', '/agents', { workflow_id: 'plain_agent', model: scriptedModel(model.baseUrl) });
  nc = await connect({ servers: mesh.nats.url });
  jsm = await jetstreamManager(nc);
}, 180_000);

afterAll(async () => {
  await nc?.close();
  await mesh?.stop();
  await model?.stop();
});

/** The stream sequence of the message stored under `msgId`, if MESH_TASKS holds it. */
async function seqOf(msgId: string): Promise<number | undefined> {
  const { state } = await jsm.streams.info(Streams.TASKS.name);
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const stored = await jsm.streams.getMessage(Streams.TASKS.name, { seq }).catch(() => null);
    if (stored?.header?.get('Nats-Msg-Id') === msgId) return seq;
  }
  return undefined;
}

it('when the queue loses an accepted task before any executor took it, the gateway publishes it again and it ends done once', async () => {
  await mesh.executors[0]!.stop('SIGTERM');
  const response = await submit(mesh, {
    workflow_id: 'plain_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'lost on the way' }],
  });
  expect(response.status).toBe(202);
  const { trace_id: traceId } = (await response.json()) as { trace_id: string };
  const assembledId = `${MESH_ACCOUNT}.${traceId}:assembled`;
  let lostSeq: number | undefined;
  await waitFor(async () => (lostSeq = await seqOf(assembledId)) !== undefined, {
    timeoutMs: 30_000,
    description: 'the assembled task in MESH_TASKS',
  });
  await jsm.streams.deleteMessage(Streams.TASKS.name, lostSeq!, false);
  await mesh.addExecutor();

  const events = await sseEvents(mesh, traceId);
  expect(events.filter((event) => event.type === 'done' || event.type === 'error')).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'answered after the re-drive' } });
  expect(
    mesh.gateway.logs.filter(
      (line) =>
        line.msg === 'task message lost by the task queue; published again' && line.trace_id === traceId,
    ),
  ).toHaveLength(1);
  // The model was asked once: the lost copy never ran.
  expect(model.requests).toHaveLength(1);
}, 120_000);
