/**
 * Publishing an assembled task while NATS stalls, on real NATS: the server freezes (docker pause /
 * SIGSTOP) just as the task is published, so that try gets no answer although it reaches the server.
 */
import { ensureMeshStreams } from '@agentmesh/bus';
import { AgentDefinition, Streams, taskAssembledSubject, type AssembledTask } from '@agentmesh/protocol';
import {
  startNats,
  waitFor,
  type NatsServer,
  freezingOnFirstPublish,
  type FreezingPublisher,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, qichachaAgent, receivedTask } from './__fixtures__/assembly.js';
import { AssembledTaskPublisher } from './assembled-task-publisher.js';
import { assembleTask } from './task-assembler.js';

/** Short, so the frozen server costs half a second per try. */
const PUBLISH_TIMEOUT_MS = 500;

let nats: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let paused = false;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
});

afterAll(async () => {
  if (paused) await nats.unpause();
  await nc?.close();
  await nats?.stop();
});

/** The real client; the first publish through it freezes the server first. Counts the tries. */
function freezingPublisher(): FreezingPublisher {
  return freezingOnFirstPublish(jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS }), {
    pause: async () => {
      await nats.pause();
      paused = true;
    },
  });
}

/** A task assembled for real (an agent without tools, a model key, a sealed vault). */
async function assembledTask(): Promise<AssembledTask> {
  const agent = AgentDefinition.parse(qichachaAgent({ tools: [] }));
  const assembled = await assembleTask(receivedTask('company_research'), {
    agents: { resolve: async () => ({ agent }) },
    tools: { resolve: async () => undefined },
    credentials: { resolve: async () => ({ values: { MODEL_KEY: 'model-key-1' }, missing: [] }) },
    sealFor: generateVaultKeyPair('exec-1'),
  });
  if (!assembled.ok) throw assembled.failure;
  return assembled.task;
}

describe('an assembled task published while NATS stalls', () => {
  it('when the first try gets no answer, it is sent again with the same Nats-Msg-Id and stored once', async () => {
    const assembled = await assembledTask();
    const { js, tries } = freezingPublisher();
    const publisher = new AssembledTaskPublisher(js);

    const publishing = publisher.publish(assembled);
    await waitFor(() => tries() >= 2, { timeoutMs: 10_000, description: 'a second try of the publish' });
    await nats.unpause();
    paused = false;
    const { duplicate } = await publishing;

    // The first try was stored once the server thawed; the later one was its duplicate.
    expect(duplicate).toBe(true);
    const subject = taskAssembledSubject(ACCOUNT);
    const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
    expect(info.state.subjects?.[subject]).toBe(1);
  });
});

describe('an assembled task published again after the queue lost it', () => {
  it('a re-drive is stored under its own id although its first copy is within the duplicate window', async () => {
    const assembled = await assembledTask();
    await jsm.streams.purge(Streams.TASKS.name);
    const publisher = new AssembledTaskPublisher(jetstream(nc));

    expect(await publisher.publish(assembled)).toEqual({ duplicate: false });
    expect(await publisher.publish(assembled)).toEqual({ duplicate: true });
    expect(await publisher.publish(assembled, 1)).toEqual({ duplicate: false });
    expect(await publisher.publish(assembled, 1)).toEqual({ duplicate: true });

    const subject = taskAssembledSubject(ACCOUNT);
    const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
    expect(info.state.subjects?.[subject]).toBe(2);
  });
});
