/**
 * The mesh as an MCP server (issue 11, item 3), end to end: gateway, assembler and an executor as real
 * processes on real NATS, a scripted model answering, and an MCP client from the official SDK talking
 * Streamable HTTP to the gateway's `/mcp`. It lists the agents its account may run, runs one with
 * progress, cancels one (by the SDK's cancellation and by dropping the connection), and is refused with
 * a bad key, an unknown tool, or another caller's session.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ErrorCode as McpErrorCode,
  LATEST_PROTOCOL_VERSION,
  McpError,
  type CallToolResult,
  type Progress,
} from '@modelcontextprotocol/sdk/types.js';
import type { TaskEvent } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, expectStrictlyIncreasing, sseEvents, taskStatus } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const OTHER_ACCOUNT = 'globex';
/** An account whose model key is stored for the whole account, never for a user. */
const KEYED_ACCOUNT = 'initech';
const KEYED_ANSWER = 'Answered with the account-wide model key.';
const ACCOUNT_MODEL_KEY = 'canary-mcp-account-wide-model-key';
const ANSWER = 'Acme was founded in 1949, according to the registry.';
const SLOW = 'take your time';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;
let otherKey = '';
let keyedAccountKey = '';
/** Answers only requests carrying the model key stored for the whole of KEYED_ACCOUNT. */
let keyedModel: ScriptedModel;
const clients: Client[] = [];

type Message = { role: string; content?: unknown };
const messagesOf = (request: { body: unknown }): Message[] =>
  (request.body as { messages?: Message[] } | undefined)?.messages ?? [];

/** Writes an agent into an account's registry (an admin naming the account). */
async function putAccountAgent(accountId: string, agent: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin/agents/${String(agent.workflow_id)}`, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      'x-account-id': accountId,
      'content-type': 'application/json',
    },
    body: JSON.stringify(agent),
  });
  if (!response.ok) throw new Error(`PUT agent → ${response.status} ${await response.text()}`);
}

async function connectMcp(
  apiKey: string,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'mesh-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', mesh.gatewayUrl), {
    requestInit: { headers: { authorization: `Bearer ${apiKey}` } },
  });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
}

/** Why the gateway cancelled an MCP call's task, from its log. */
const cancelReason = async (traceId: string): Promise<unknown> =>
  (
    await mesh.gateway.waitForLog(
      (line) => line.msg === 'mcp agent call cancelled its task' && line.trace_id === traceId,
      10_000,
    )
  ).reason;

const traceIdOf = (progress: Progress[]): string | undefined =>
  /^task ([0-9a-f]{32}) queued$/.exec(progress[0]?.message ?? '')?.[1];

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/registry', reply: { status: 200, body: { founded: 1949 } } }],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const messages = messagesOf(request);
      if (JSON.stringify(messages).includes(SLOW)) return { fault: 'hang' };
      return messages.at(-1)?.role === 'tool'
        ? { content: ANSWER, chunkSize: 8 }
        : { toolCalls: [{ name: 'registry_lookup', arguments: { q: 'acme' } }] };
    },
  });
  mesh = await startMesh({ executors: 1 });
  const created = await admin(mesh, 'POST', '/api-keys', { account_id: OTHER_ACCOUNT });
  otherKey = ((await created.json()) as { api_key: string }).api_key;

  await admin(mesh, 'POST', '/tools', {
    schema_version: 'v1',
    name: 'registry_lookup',
    description: 'Looks a company up in the registry',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execution: { method: 'GET', base_url: `${api.url}/registry`, param_placement: 'query' },
  });
  const agentModel = { model_name: 'scripted', base_url: model.baseUrl };
  await putAccountAgent(MESH_ACCOUNT, {
    workflow_id: 'registry_agent',
    name: 'Registry agent',
    description: 'Answers questions about companies from the registry.',
    model: agentModel,
    tools: ['registry_lookup'],
  });
  await putAccountAgent(MESH_ACCOUNT, {
    workflow_id: 'broken.agent',
    model: agentModel,
    tools: ['no_such_tool'],
  });
  await putAccountAgent(OTHER_ACCOUNT, { workflow_id: 'globex_agent', model: agentModel });
  // The shared catalogue: every account may run it.
  await admin(mesh, 'POST', '/agents', { workflow_id: 'shared_helper', model: agentModel });

  keyedModel = await startScriptedModel({
    apiKey: ACCOUNT_MODEL_KEY,
    respond: () => ({ content: KEYED_ANSWER }),
  });
  const keyed = await admin(mesh, 'POST', '/api-keys', { account_id: KEYED_ACCOUNT });
  keyedAccountKey = ((await keyed.json()) as { api_key: string }).api_key;
  await putAccountAgent(KEYED_ACCOUNT, {
    workflow_id: 'keyed_agent',
    model: { model_name: 'scripted', base_url: keyedModel.baseUrl, api_key_credential: 'MODEL_KEY' },
  });
  await admin(mesh, 'PUT', `/accounts/${KEYED_ACCOUNT}/credentials/MODEL_KEY`, { value: ACCOUNT_MODEL_KEY });
}, 180_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await mesh?.stop();
  await model?.stop();
  await keyedModel?.stop();
  await api?.stop();
});

describe('the mesh as an MCP server', () => {
  it("an MCP client lists the agents its account may run (its own and the shared ones), never another account's", async () => {
    const { client } = await connectMcp(mesh.apiKey);
    const { client: other } = await connectMcp(otherKey);

    const { tools } = await client.listTools();
    const otherTools = (await other.listTools()).tools;

    expect(tools.map((tool) => tool.name)).toEqual([
      'run_broken.agent',
      'run_registry_agent',
      'run_shared_helper',
    ]);
    expect(otherTools.map((tool) => tool.name)).toEqual(['run_globex_agent', 'run_shared_helper']);
    const registry = tools.find((tool) => tool.name === 'run_registry_agent')!;
    expect(registry).toMatchObject({
      title: 'Registry agent',
      description: 'Answers questions about companies from the registry.',
      inputSchema: { type: 'object', required: ['message'] },
    });
    expect(Object.keys(registry.inputSchema.properties ?? {}).sort()).toEqual([
      'message',
      'user',
      'variables',
      'version',
    ]);
  });

  it("calling an agent tool runs its task, sends its tool calls and answer as progress, and answers with the agent's final message", async () => {
    const { client } = await connectMcp(mesh.apiKey);
    const progress: Progress[] = [];

    const result = (await client.callTool(
      {
        name: 'run_registry_agent',
        arguments: { message: 'When was Acme founded?', variables: { region: 'eu' } },
      },
      undefined,
      { onprogress: (update) => progress.push(update) },
    )) as CallToolResult;

    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: ANSWER }]);
    const traceId = traceIdOf(progress);
    expect(traceId).toBeDefined();
    expect(result.structuredContent).toEqual({ trace_id: traceId, answer: ANSWER });

    // One notification per watched event, numbered by its seq: the counter strictly increases.
    const events = await sseEvents(mesh, traceId!);
    const watched = events.filter((event) =>
      ['tool_start', 'tool_result', 'message_chunk'].includes(event.type),
    );
    expect(progress.slice(1).map((update) => update.progress)).toEqual(watched.map((event) => event.seq));
    expect(progress[0]!.progress).toBe(0);
    expect(progress.slice(1).map((update) => update.message)).toEqual([
      'calling registry_lookup',
      expect.stringMatching(/^registry_lookup answered \(\d+ ms\)$/),
      ...watched
        .filter((event) => event.type === 'message_chunk')
        .map((event) => (event.data as { delta: string }).delta),
    ]);
    expect(expectStrictlyIncreasing(events)).toBe(true);
    expect(await taskStatus(mesh, traceId!)).toMatchObject({ status: 'done', workflow_id: 'registry_agent' });
    // The call's message is the task's user message, and its tool really ran.
    const modelCall = model.requests.find((request) =>
      JSON.stringify(request.body).includes('When was Acme founded?'),
    );
    expect(messagesOf(modelCall!).find((message) => message.role === 'user')?.content).toBe(
      'When was Acme founded?',
    );
    expect(api.requests.at(-1)?.query).toMatchObject({ q: 'acme' });
  });

  it('a call without `user` runs as user mcp, whose task gets the model key stored only for the whole account, and answers', async () => {
    const ownKeys = await admin(mesh, 'GET', `/accounts/${KEYED_ACCOUNT}/users/mcp/credentials`);
    expect(await ownKeys.json()).toEqual({ names: [] });
    const { client } = await connectMcp(keyedAccountKey);
    const progress: Progress[] = [];

    const result = (await client.callTool(
      { name: 'run_keyed_agent', arguments: { message: 'Which key reached you?' } },
      undefined,
      { onprogress: (update) => progress.push(update) },
    )) as CallToolResult;

    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: KEYED_ANSWER }]);
    const traceId = traceIdOf(progress)!;
    const status = await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}`, {
      headers: { authorization: `Bearer ${keyedAccountKey}` },
    });
    expect(await status.json()).toMatchObject({ status: 'done', workflow_id: 'keyed_agent' });
    expect(keyedModel.requests.map((request) => request.headers['authorization'])).toEqual([
      `Bearer ${ACCOUNT_MODEL_KEY}`,
    ]);
  });

  it("a task that ends in error answers isError with the error's code and message", async () => {
    const { client } = await connectMcp(mesh.apiKey);
    const progress: Progress[] = [];

    const result = (await client.callTool(
      { name: 'run_broken.agent', arguments: { message: 'hello' } },
      undefined,
      {
        onprogress: (update) => progress.push(update),
      },
    )) as CallToolResult;

    const events = await sseEvents(mesh, traceIdOf(progress)!);
    const terminal = events.at(-1) as Extract<TaskEvent, { type: 'error' }>;
    expect(terminal.type).toBe('error');
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      { type: 'text', text: `${terminal.data.code}: ${terminal.data.message}` },
    ]);
    expect(result.structuredContent).toMatchObject({
      trace_id: traceIdOf(progress),
      error: { code: terminal.data.code, message: terminal.data.message, retryable: terminal.data.retryable },
    });
  });

  it('cancelling a call (the SDK sends notifications/cancelled) cancels its task, which ends cancelled', async () => {
    const { client } = await connectMcp(mesh.apiKey);
    const progress: Progress[] = [];
    const abort = new AbortController();
    const modelRequests = model.requests.length;

    const call = client.callTool({ name: 'run_registry_agent', arguments: { message: SLOW } }, undefined, {
      signal: abort.signal,
      onprogress: (update) => progress.push(update),
    });
    const rejected = call.catch((error: unknown) => error);
    // The task is running: its model call hangs.
    await waitFor(() => model.requests.length > modelRequests && traceIdOf(progress), { timeoutMs: 30_000 });
    abort.abort('the user changed their mind');

    expect(await rejected).toBeInstanceOf(Error);
    const traceId = traceIdOf(progress)!;
    const status = await waitFor(
      async () => {
        const record = await taskStatus(mesh, traceId);
        return record.status === 'cancelled' && record;
      },
      { timeoutMs: 30_000, description: 'the task to end cancelled' },
    );
    expect(status.cancel_requested_at).toBeDefined();
    const events = await sseEvents(mesh, traceId);
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(await cancelReason(traceId)).toBe('the MCP client cancelled the call');
  });

  it("closing a call's connection cancels its task", async () => {
    const { transport } = await connectMcp(mesh.apiKey);
    const modelRequests = model.requests.length;
    const connection = new AbortController();
    const response = await fetch(new URL('/mcp', mesh.gatewayUrl), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${mesh.apiKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'run_registry_agent', arguments: { message: SLOW }, _meta: { progressToken: 'p1' } },
      }),
      signal: connection.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = '';
    let traceId: string | undefined;
    while (traceId === undefined) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early: ${received}`);
      received += value;
      traceId = /task ([0-9a-f]{32}) queued/.exec(received)?.[1];
    }
    await waitFor(() => model.requests.length > modelRequests, { timeoutMs: 30_000 });

    connection.abort();

    const status = await waitFor(
      async () => {
        const record = await taskStatus(mesh, traceId);
        return record.status === 'cancelled' && record;
      },
      { timeoutMs: 30_000, description: 'the task to end cancelled' },
    );
    expect(status.status).toBe('cancelled');
    expect(await cancelReason(traceId)).toBe("the MCP call's connection closed");
  });

  it("a bad API key is refused with 401 and the gateway's error body", async () => {
    const response = await fetch(new URL('/mcp', mesh.gatewayUrl), {
      method: 'POST',
      headers: {
        authorization: 'Bearer am_not_a_key',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: {
          protocolVersion: LATEST_PROTOCOL_VERSION,
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      }),
    });

    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'UNAUTHORIZED', message: 'unknown API key' });
    await expect(connectMcp('am_not_a_key')).rejects.toMatchObject({ code: 401 });
  });

  it("calling an unknown tool, or another account's agent, is an MCP error (InvalidParams) and runs nothing", async () => {
    const { client } = await connectMcp(mesh.apiKey);
    const modelRequests = model.requests.length;

    for (const name of ['run_no_such_agent', 'run_globex_agent', 'registry_agent']) {
      const error = await client
        .callTool({ name, arguments: { message: 'hi' } })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(McpError);
      expect(error).toMatchObject({ code: McpErrorCode.InvalidParams });
      expect((error as McpError).message).toContain(`Unknown tool: ${name}`);
    }
    expect(model.requests.length).toBe(modelRequests);
  });

  it("a session is its caller's: another API key naming it is told it does not exist", async () => {
    const { transport } = await connectMcp(mesh.apiKey);

    const response = await fetch(new URL('/mcp', mesh.gatewayUrl), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${otherKey}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId!,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
    });

    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});
