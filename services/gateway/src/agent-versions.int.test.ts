import { AgentDiff, AgentVersionList, ScopedAgent } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-versions-0123456789abcdef';
const admin = bearer(ADMIN_KEY);
const acme = { 'x-account-id': 'acme' };
const globex = { 'x-account-id': 'globex' };

let nats: NatsServer;
let gw: TestGateway;
let trusted: TestGateway;
beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { ADMIN_API_KEYS: ADMIN_KEY, AGENT_VERSIONS_KEPT: '3' });
  trusted = await startTestGateway(nats.url, { TRUST_ACCOUNT_HEADERS: 'true' });
});
afterAll(async () => {
  await trusted?.stop();
  await gw?.stop();
  await nats?.stop();
});

const body = (prompt: string, model = 'm1') => ({
  system_prompt: prompt,
  model: { model_name: model, base_url: 'http://127.0.0.1:9/v1' },
});

async function writeVersions(base: string, id: string, prompts: string[], headers: Record<string, string>) {
  for (const prompt of prompts) {
    const written = await call(base, 'PUT', `/v1/admin/agents/${id}`, { body: body(prompt), headers });
    expect([200, 201]).toContain(written.status);
  }
}

describe('agent versions over the management API', () => {
  it('when an agent is written three times, GET says version 3 and its digest, and the versions list 3, 2, 1', async () => {
    const first = await call(trusted.url, 'PUT', '/v1/admin/agents/writer', {
      body: body('one'),
      headers: acme,
    });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ version: 1, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
    await writeVersions(trusted.url, 'writer', ['two', 'three'], acme);

    const read = ScopedAgent.parse(
      (await call(trusted.url, 'GET', '/v1/admin/agents/writer', { headers: acme })).body,
    );
    expect(read).toMatchObject({ version: 3, system_prompt: 'three', scope: 'account' });
    const list = await call(trusted.url, 'GET', '/v1/admin/agents/writer/versions', { headers: acme });
    expect(list.status).toBe(200);
    const versions = AgentVersionList.parse(list.body);
    expect(versions.current).toBe(3);
    expect(versions.versions.map((v) => v.version)).toEqual([3, 2, 1]);
    expect(versions.versions[0]?.digest).toBe(read.digest);

    const shown = await call(trusted.url, 'GET', '/v1/admin/agents/writer/versions/1', { headers: acme });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ version: 1, system_prompt: 'one' });
  });

  it('when two versions are diffed, each changed member is one entry at its JSON pointer', async () => {
    await call(trusted.url, 'PUT', '/v1/admin/agents/differ', { body: body('a', 'm1'), headers: acme });
    await call(trusted.url, 'PUT', '/v1/admin/agents/differ', {
      body: { ...body('b', 'm2'), tools: ['search'] },
      headers: acme,
    });
    const diff = await call(trusted.url, 'GET', '/v1/admin/agents/differ/diff?from=1&to=2', {
      headers: acme,
    });
    expect(diff.status).toBe(200);
    expect(AgentDiff.parse(diff.body).changes).toEqual([
      { path: '/model/model_name', op: 'changed', from: 'm1', to: 'm2' },
      { path: '/system_prompt', op: 'changed', from: 'a', to: 'b' },
      { path: '/tools', op: 'changed', from: [], to: ['search'] },
    ]);
  });

  it('when the agent is rolled back, GET answers the old version and no new version is made', async () => {
    await writeVersions(trusted.url, 'rolled', ['one', 'two', 'three'], acme);
    const rolled = await call(trusted.url, 'POST', '/v1/admin/agents/rolled/rollback', {
      body: { version: 2 },
      headers: acme,
    });
    expect(rolled.status).toBe(200);
    expect(rolled.body).toMatchObject({ version: 2, system_prompt: 'two' });
    expect((await call(trusted.url, 'GET', '/v1/admin/agents/rolled', { headers: acme })).body).toMatchObject(
      {
        version: 2,
        system_prompt: 'two',
      },
    );
    const versions = await call(trusted.url, 'GET', '/v1/admin/agents/rolled/versions', { headers: acme });
    expect(versions.body).toMatchObject({ current: 2 });
    expect(versions.body.versions.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
  });

  it('when a version is unknown, show, diff and rollback answer 404 naming it', async () => {
    await writeVersions(trusted.url, 'known', ['one'], acme);
    for (const [method, path, payload] of [
      ['GET', '/v1/admin/agents/known/versions/7', undefined],
      ['GET', '/v1/admin/agents/known/diff?from=1&to=7', undefined],
      ['POST', '/v1/admin/agents/known/rollback', { version: 7 }],
    ] as const) {
      const answer = await call(trusted.url, method, path, { headers: acme, body: payload });
      expect(answer.status, path).toBe(404);
      expect(answer.body).toMatchObject({ code: 'NOT_FOUND' });
      expect(answer.body.message).toContain('version 7');
    }
    const noAgent = await call(trusted.url, 'GET', '/v1/admin/agents/nobody/versions', { headers: acme });
    expect(noAgent.status).toBe(404);
  });

  it('when a version is not a number from 1, the answer is 400', async () => {
    await writeVersions(trusted.url, 'strict', ['one'], acme);
    for (const [method, path, payload] of [
      ['GET', '/v1/admin/agents/strict/versions/0', undefined],
      ['GET', '/v1/admin/agents/strict/versions/abc', undefined],
      ['GET', '/v1/admin/agents/strict/versions/01', undefined],
      ['GET', '/v1/admin/agents/strict/diff?from=1', undefined],
      ['POST', '/v1/admin/agents/strict/rollback', { version: '2' }],
      ['POST', '/v1/admin/agents/strict/rollback', { version: 0 }],
      ['POST', '/v1/admin/agents/strict/rollback', {}],
    ] as const) {
      const answer = await call(trusted.url, method, path, { headers: acme, body: payload });
      expect(answer.status, `${method} ${path} ${JSON.stringify(payload)}`).toBe(400);
      expect(answer.body).toMatchObject({ code: 'INVALID_REQUEST' });
    }
  });

  it('when a submission pins a malformed version, it is refused with 400 before anything is queued', async () => {
    for (const workflow of ['writer@', 'writer@0', 'writer@v2', 'writer@1@2']) {
      const answer = await call(trusted.url, 'POST', '/v1/tasks', {
        headers: acme,
        body: { workflow_id: workflow, user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
      });
      expect(answer.status, workflow).toBe(400);
      expect(answer.body).toMatchObject({ code: 'INVALID_REQUEST' });
    }
  });

  it('when a submission pins a version the agent does not keep, or an agent the account cannot see, it is 404 naming it; a kept one is accepted', async () => {
    await writeVersions(trusted.url, 'pinned', ['one', 'two'], acme);
    const submit = (workflow: string, headers: Record<string, string>) =>
      call(trusted.url, 'POST', '/v1/tasks', {
        headers,
        body: { workflow_id: workflow, user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
      });
    const unknown = await submit('pinned@9', acme);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('version 9') });
    expect((await submit('pinned@1', globex)).status).toBe(404);
    const kept = await submit('pinned@1', acme);
    expect(kept.status).toBe(202);
    const status = await call(trusted.url, 'GET', `/v1/tasks/${kept.body.trace_id}`, { headers: acme });
    expect(status.body).toMatchObject({ status: 'queued', agent_version: 1 });
  });

  it('when another account asks, it can neither see the versions nor roll them back', async () => {
    await writeVersions(trusted.url, 'secret_agent', ['one', 'two'], acme);
    for (const [method, path, payload] of [
      ['GET', '/v1/admin/agents/secret_agent/versions', undefined],
      ['GET', '/v1/admin/agents/secret_agent/versions/1', undefined],
      ['GET', '/v1/admin/agents/secret_agent/diff?from=1&to=2', undefined],
      ['POST', '/v1/admin/agents/secret_agent/rollback', { version: 1 }],
    ] as const) {
      const answer = await call(trusted.url, method, path, { headers: globex, body: payload });
      expect(answer.status, path).toBe(404);
    }
    expect(
      (await call(trusted.url, 'GET', '/v1/admin/agents/secret_agent', { headers: acme })).body,
    ).toMatchObject({
      version: 2,
    });
  });

  it('when an account reads a shared agent, it sees its versions but may not roll it back', async () => {
    await writeVersions(gw.url, 'shared_agent', ['one', 'two'], admin);
    const seen = await call(trusted.url, 'GET', '/v1/admin/agents/shared_agent/versions', { headers: acme });
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ current: 2, scope: 'shared' });
    const refused = await call(trusted.url, 'POST', '/v1/admin/agents/shared_agent/rollback', {
      body: { version: 1 },
      headers: acme,
    });
    expect(refused.status).toBe(403);
  });

  it('when more versions are written than AGENT_VERSIONS_KEPT, only the newest are kept', async () => {
    await writeVersions(gw.url, 'busy', ['1', '2', '3', '4', '5'], admin);
    const versions = await call(gw.url, 'GET', '/v1/admin/agents/busy/versions', { headers: admin });
    expect(versions.body.versions.map((v: { version: number }) => v.version)).toEqual([5, 4, 3]);
    const pruned = await call(gw.url, 'GET', '/v1/admin/agents/busy/versions/1', { headers: admin });
    expect(pruned.status).toBe(404);
  });
});
