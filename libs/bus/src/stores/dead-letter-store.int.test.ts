import { deadLetterSubject, newTraceId, type AssembledTask } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDeadLetterStream } from '../resources.js';
import { CorruptRecordError } from '../errors.js';
import { DeadLetterStore, deadLetterOf } from './dead-letter-store.js';

let nats: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let store: DeadLetterStore;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await ensureDeadLetterStream(jsm);
  store = new DeadLetterStore(jetstream(nc), jsm);
}, 120_000);
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

function task(accountId: string, workflowId = 'weather', traceId = newTraceId()): AssembledTask {
  return {
    task_meta: {
      workflow_id: workflowId,
      trace_id: traceId,
      user_id: 'u1',
      account_id: accountId,
      submitted_at: new Date().toISOString(),
    },
    input: { messages: [{ role: 'user', content: 'weather in Oslo?' }], variables: {} },
    runtime_config: {
      model: {
        provider: 'openai',
        model_name: 'm',
        base_url: 'http://127.0.0.1:1/v1',
        tool_protocol: 'native',
      },
      tools: [],
      vault: { alg: 'x', kid: 'k', epk: 'e', iv: 'i', ciphertext: 'SEALED-VAULT-CANARY', tag: 't' },
    } as unknown as AssembledTask['runtime_config'],
    limits: { max_steps: 10 },
  };
}

const cause = (attempts: number, now = new Date()) => ({
  reason: { code: 'MAX_DELIVER_EXCEEDED' as const, message: `delivered ${attempts} times` },
  attempts,
  source: 'executor' as const,
  now,
});

describe('dead letter store', () => {
  it('a dead task is stored once with its reason and input and without its vault; a second add keeps the first', async () => {
    const dead = task('acme');
    expect(await store.add(deadLetterOf(dead, cause(4)))).toBe(true);
    expect(await store.add(deadLetterOf(dead, { ...cause(5), source: 'advisory' }))).toBe(false);

    const stored = await store.get('acme', dead.task_meta.trace_id);
    expect(stored?.letter).toMatchObject({
      trace_id: dead.task_meta.trace_id,
      account_id: 'acme',
      workflow_id: 'weather',
      user_id: 'u1',
      reason: { code: 'MAX_DELIVER_EXCEEDED', message: 'delivered 4 times' },
      attempts: 4,
      source: 'executor',
      input: dead.input,
    });
    const raw = await jsm.streams.getMessage('MESH_DEAD_LETTERS', { seq: stored!.seq });
    expect(raw?.string()).not.toContain('SEALED-VAULT-CANARY');
    expect(raw?.string()).not.toContain('runtime_config');
  });

  it("listing one account shows its letters only, newest first, filtered by workflow and limited; another account's is not found", async () => {
    const older = task('lister', 'alpha');
    const newer = task('lister', 'beta');
    const foreign = task('other', 'alpha');
    await store.add(deadLetterOf(older, cause(2, new Date('2026-01-01T00:00:00Z'))));
    await store.add(deadLetterOf(newer, cause(2, new Date('2026-01-02T00:00:00Z'))));
    await store.add(deadLetterOf(foreign, cause(2)));

    const all = await store.list({ accountId: 'lister', limit: 10 });
    expect(all.letters.map((s) => s.letter.trace_id)).toEqual([
      newer.task_meta.trace_id,
      older.task_meta.trace_id,
    ]);
    const alpha = await store.list({ accountId: 'lister', workflowId: 'alpha', limit: 10 });
    expect(alpha.letters.map((s) => s.letter.trace_id)).toEqual([older.task_meta.trace_id]);
    expect((await store.list({ accountId: 'lister', limit: 1 })).letters).toHaveLength(1);
    expect(await store.get('lister', foreign.task_meta.trace_id)).toBeUndefined();
    expect(await store.accountsOf(foreign.task_meta.trace_id)).toEqual(['other']);
    const everyone = await store.list({ limit: 100 });
    expect(everyone.letters.map((s) => s.letter.trace_id)).toContain(foreign.task_meta.trace_id);
  });

  it('of two changes from the same read, the second is refused; a removed letter is gone', async () => {
    const dead = task('changes');
    await store.add(deadLetterOf(dead, cause(3)));
    const read = (await store.get('changes', dead.task_meta.trace_id))!;
    const redriven = {
      ...read.letter,
      redriven: { trace_id: newTraceId(), redriven_at: new Date().toISOString() },
    };
    expect(await store.replace(redriven, read.seq)).toBeDefined();
    expect(await store.replace(redriven, read.seq)).toBeUndefined();
    expect((await store.get('changes', dead.task_meta.trace_id))?.letter.redriven).toEqual(redriven.redriven);

    expect(await store.remove('changes', dead.task_meta.trace_id)).toBe(true);
    expect(await store.get('changes', dead.task_meta.trace_id)).toBeUndefined();
    expect(await store.remove('changes', dead.task_meta.trace_id)).toBe(false);
  });

  it('when a message on an account letter subject is no letter (not the schema, or naming another task), listing skips and names it, get throws CorruptRecordError, and remove drops it', async () => {
    const good = task('messy');
    await store.add(deadLetterOf(good, cause(2)));
    const notSchema = newTraceId();
    const otherTask = newTraceId();
    const js = jetstream(nc);
    await js.publish(
      deadLetterSubject('messy', notSchema),
      JSON.stringify({ trace_id: notSchema, hello: 1 }),
    );
    // A valid letter, but of another account's task: never shown as this one's.
    const foreignLetter = deadLetterOf(task('elsewhere', 'weather', otherTask), cause(2));
    await js.publish(deadLetterSubject('messy', otherTask), JSON.stringify(foreignLetter));

    const listed = await store.list({ accountId: 'messy', limit: 10 });

    expect(listed.letters.map((s) => s.letter.trace_id)).toEqual([good.task_meta.trace_id]);
    expect(listed.malformed.map((m) => m.traceId).sort()).toEqual([notSchema, otherTask].sort());
    expect(listed.malformed.every((m) => m.accountId === 'messy' && m.seq > 0)).toBe(true);
    await expect(store.get('messy', notSchema)).rejects.toBeInstanceOf(CorruptRecordError);
    await expect(store.get('messy', otherTask)).rejects.toBeInstanceOf(CorruptRecordError);
    expect(await store.remove('messy', notSchema)).toBe(true);
    expect((await store.list({ accountId: 'messy', limit: 10 })).malformed.map((m) => m.traceId)).toEqual([
      otherTask,
    ]);
  });
});
