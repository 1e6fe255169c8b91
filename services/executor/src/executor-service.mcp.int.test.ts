// MCP servers as tool sources end to end: an in-process executor on real NATS, a scripted model, and the test
// kit's real MCP server (the official SDK over Streamable HTTP). The task carries the server as the assembler
// puts it (`runtime_config.mcp_servers`) with the server's token in the sealed vault.
import { followTaskEvents } from '@agentmesh/bus';
import {
  Buckets,
  NativeProviderAnnouncement,
  cancelSubject,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type AssembledTask,
  type CancelSignal,
  type McpServerConnection,
  type NativeTool,
  type TaskEvent,
  type ToolDefinition,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startMcpServer,
  startRecallStandIn,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  startNats,
  type ChatCompletionRequest,
  type McpTestServer,
  type ModelStep,
  type NatsServer,
  type RecallStandIn,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordWire, startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { userText, toolResultsSoFar, offeredTools } from './__fixtures__/model-requests.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const MCP_TOKEN = `canary-mcp-token-${crypto.randomUUID()}`;
const SEARCH_KEY = `canary-search-key-${crypto.randomUUID()}`;
const vaultKeys = generateVaultKeyPair('exec-mcp-test');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let mcp: McpTestServer;
let api: RecordingApi;
let recall: RecallStandIn;
let executor: RunningService;
let wire: { subject: string; text: string }[];
const behaviours = new Map<string, (request: ChatCompletionRequest) => ModelStep>();

/** The test kit's server as an account defines it: bearer token from the vault, a filter and a prefix. */
const kitServer = (): McpServerConnection => ({
  name: 'kit',
  transport: { type: 'streamable-http', url: mcp.url },
  auth: { type: 'bearer', token_source: 'KIT_TOKEN' },
  tool_filter: { deny: ['unlock_tool'] },
  tool_prefix: 'kit_',
});

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  wire = recordWire(client);
  model = await startScriptedModel({
    respond: (request) => {
      const behaviour = behaviours.get(userText(request));
      if (behaviour === undefined) throw new Error(`no behaviour for ${userText(request)}`);
      return behaviour(request);
    },
  });
  mcp = await startMcpServer({ bearerToken: MCP_TOKEN });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { body: { hits: [] } } }],
  });
  // Recall answering an action whose source is the kit's MCP server (seed 004 phase 3).
  recall = await startRecallStandIn(client, () => ({
    body: {
      _dynamic_tools: [
        {
          name: 'echo_for_patient',
          description: 'Echo for the recalled patient',
          parameters: { type: 'object', properties: {} },
          mcp: { server: 'kit', tool_name: 'echo' },
          fixed_arguments: { text: 'patient p-7' },
        },
      ],
    },
  }));
  executor = await startInProcessExecutor({ natsUrl: nats.url, vaultKeys, env: { LLM_MAX_RETRIES: '0' } });
});

afterAll(async () => {
  await executor?.stop();
  await recall?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), mcp?.stop(), api?.stop()]);
  await nats?.stop();
});

interface TaskOptions {
  account?: string;
  servers?: McpServerConnection[];
  tools?: ToolDefinition[];
  /** Called with the task once it is published. */
  started?: (task: AssembledTask) => Promise<void>;
}

async function runTask(user: string, options: TaskOptions = {}): Promise<TaskEvent[]> {
  const account = options.account ?? ACCOUNT;
  const traceId = newTraceId();
  const task = assembledTask({
    traceId,
    accountId: account,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key', KIT_TOKEN: MCP_TOKEN, SEARCH_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    tools: options.tools ?? [],
    mcpServers: options.servers ?? [kitServer()],
  });
  await js.publish(taskAssembledSubject(account), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  await options.started?.(task);
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: account,
    traceId,
    signal: AbortSignal.timeout(30_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

/** A native tool's definition as the executor announces it in mesh_native_providers. */
async function announcedTool(name: string): Promise<NativeTool> {
  const providers = await new Kvm(js).open(Buckets.NATIVE_PROVIDERS);
  for await (const key of await providers.keys()) {
    const announcement = NativeProviderAnnouncement.parse((await providers.get(key))?.json());
    const tool = announcement.tools.find((candidate) => candidate.name === name);
    if (tool !== undefined) return tool;
  }
  throw new Error(`${name} is not announced`);
}

/** One tool call, then an answer that quotes the tool's result. */
function callOnce(name: string, args: Record<string, unknown>, seen?: string[][]) {
  return (request: ChatCompletionRequest): ModelStep => {
    seen?.push(offeredTools(request));
    if (toolResultsSoFar(request) === 0) return { toolCalls: [{ id: 'call_1', name, arguments: args }] };
    const last = request.body.messages.at(-1);
    return { content: `tool said: ${String(last?.content ?? '')}` };
  };
}

const eventsOf = (events: TaskEvent[], ...types: TaskEvent['type'][]) =>
  events.filter((event) => types.includes(event.type));

describe('an agent whose tools come from an MCP server over Streamable HTTP', () => {
  it('completes a task with tool_start/tool_result for the MCP tool, and the server token reaches that server only', async () => {
    const seen: string[][] = [];
    behaviours.set('echo hello, then search', (request) => {
      seen.push(offeredTools(request));
      switch (toolResultsSoFar(request)) {
        case 0:
          return {
            toolCalls: [
              { id: 'call_echo', name: 'kit_echo', arguments: { text: 'hello' } },
              { id: 'call_search', name: 'search', arguments: { q: 'mcp' } },
            ],
          };
        default:
          return { content: 'done with echo and search' };
      }
    });
    const callsBefore = mcp.calls.length;
    const events = await runTask('echo hello, then search', { tools: [searchTool(api.url)] });

    // The model saw the server's tools under the prefix, the denied one left out, beside the bound tool.
    expect(seen[0]).toEqual(
      expect.arrayContaining(['search', 'kit_echo', 'kit_add', 'kit_fail', 'kit_count_slowly']),
    );
    expect(seen[0]).not.toContain('kit_unlock_tool');
    expect(eventsOf(events, 'tool_start', 'tool_result').map((event) => [event.type, event.data])).toEqual(
      expect.arrayContaining([
        ['tool_start', { call_id: 'call_echo', tool: 'kit_echo', arguments: { text: 'hello' } }],
        ['tool_result', expect.objectContaining({ call_id: 'call_echo', ok: true, result: 'echo: hello' })],
      ]),
    );
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'done with echo and search' } });

    const call = mcp.calls.slice(callsBefore).find((recorded) => recorded.tool === 'echo');
    expect(call?.headers.authorization).toBe(`Bearer ${MCP_TOKEN}`);
    // The call's idempotency key, the same should a redelivered task run it again.
    expect(call?.meta?.['agentmesh/idempotency-key']).toBe(`${events[0]!.trace_id}:call_echo`);
    // The other tool's API got its own key and nothing of the MCP server's.
    const searched = api.requests.at(-1);
    expect(searched?.headers['x-api-key']).toBe(SEARCH_KEY);
    expect(JSON.stringify(searched)).not.toContain(MCP_TOKEN);
    // And the MCP server got nothing of the other tool's.
    expect(JSON.stringify(mcp.requests)).not.toContain(SEARCH_KEY);
    for (const message of wire) expect(message.text).not.toContain(MCP_TOKEN);
  });

  it('a call that fails with isError is a failed tool_result; structured content and an image come back as data and references', async () => {
    behaviours.set('fail, add and snapshot', (request) =>
      toolResultsSoFar(request) === 0
        ? {
            toolCalls: [
              { id: 'call_fail', name: 'kit_fail', arguments: { reason: 'disk full' } },
              { id: 'call_add', name: 'kit_add', arguments: { a: 2, b: 40 } },
              { id: 'call_snap', name: 'kit_snapshot', arguments: {} },
            ],
          }
        : { content: 'reported' },
    );
    const events = await runTask('fail, add and snapshot');
    const results = new Map(
      eventsOf(events, 'tool_result').map((event) => [
        (event.data as { call_id: string }).call_id,
        event.data,
      ]),
    );
    expect(results.get('call_fail')).toMatchObject({
      ok: false,
      error: { code: 'TOOL_ERROR', message: 'fail failed: failed: disk full' },
    });
    expect(results.get('call_add')).toMatchObject({
      ok: true,
      result: { text: '42', structured_content: { sum: 42 } },
    });
    const snapshot = results.get('call_snap') as { result: { references: unknown[] } };
    expect(snapshot.result.references).toEqual([
      {
        type: 'image',
        ref: expect.stringMatching(/^mcp:\/\/kit\/snapshot\/call_snap\/1$/),
        mime_type: 'image/png',
        size_bytes: expect.any(Number),
        sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      },
      { type: 'resource_link', uri: 'file:///reports/latest.csv', name: 'latest.csv', mime_type: 'text/csv' },
    ]);
    // The image travels as a reference, never as its base64 bytes.
    expect(JSON.stringify(events)).not.toContain('iVBORw0KGgo');
  });

  it('progress notifications of a call stream as tool_progress events between its tool_start and tool_result', async () => {
    behaviours.set('count to three', callOnce('kit_count_slowly', { steps: 3 }));
    const events = await runTask('count to three');
    const types = events
      .map((event) => event.type)
      .filter((type) => type.startsWith('tool_') && type !== 'tool_call_delta');
    expect(types).toEqual(['tool_start', 'tool_progress', 'tool_progress', 'tool_progress', 'tool_result']);
    expect(eventsOf(events, 'tool_progress').map((event) => event.data)).toEqual(
      [1, 2, 3].map((step) => ({
        call_id: 'call_1',
        tool: 'kit_count_slowly',
        progress: step,
        total: 3,
        message: `step ${step} of 3`,
      })),
    );
  });

  it('cancelling the task cancels the MCP request on the server', async () => {
    behaviours.set('wait for cancel', callOnce('kit_wait_for_cancel', {}));
    const cancelledBefore = mcp.cancelledCalls.length;
    const callsBefore = mcp.calls.length;
    const events = await runTask('wait for cancel', {
      started: async (task) => {
        await waitFor(() => mcp.calls.slice(callsBefore).some((call) => call.tool === 'wait_for_cancel'), {
          description: 'the MCP call to reach the server',
        });
        const signal: CancelSignal = {
          account_id: task.task_meta.account_id,
          trace_id: task.task_meta.trace_id,
          requested_at: new Date().toISOString(),
        };
        client.publish(cancelSubject(ACCOUNT, task.task_meta.trace_id), JSON.stringify(signal));
        // Well before the call's own 30 s timeout, which would also end it.
        await waitFor(() => mcp.cancelledCalls.length > cancelledBefore, {
          timeoutMs: 5_000,
          description: 'the server to see the request cancelled',
        });
      },
    });
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
  });

  it('tasks of one account reuse one MCP session; another account never shares it', async () => {
    behaviours.set('echo for sessions', callOnce('kit_echo', { text: 'x' }));
    await runTask('echo for sessions');
    const afterFirst = mcp.sessions();
    await runTask('echo for sessions');
    expect(mcp.sessions()).toBe(afterFirst);
    await runTask('echo for sessions', { account: 'globex' });
    expect(mcp.sessions()).toBe(afterFirst + 1);
  });

  it('when the server adds a tool (tools/list_changed), the next task is offered it', async () => {
    const seen: string[][] = [];
    behaviours.set('list late tools', callOnce('kit_echo', { text: 'y' }, seen));
    await runTask('list late tools');
    expect(seen[0]).not.toContain('kit_late_tool');
    mcp.changeTools();
    await waitFor(
      async () => {
        seen.length = 0;
        await runTask('list late tools');
        return seen[0]?.includes('kit_late_tool') === true;
      },
      { description: 'late_tool to be offered' },
    );
  });

  it('a server on the legacy HTTP+SSE transport works the same, with its token', async () => {
    behaviours.set('echo over sse', callOnce('sse_echo', { text: 'legacy' }));
    const callsBefore = mcp.calls.length;
    const events = await runTask('echo over sse', {
      servers: [
        { ...kitServer(), name: 'kit_sse', transport: { type: 'sse', url: mcp.sseUrl }, tool_prefix: 'sse_' },
      ],
    });
    expect(eventsOf(events, 'tool_result').map((event) => event.data)).toEqual([
      expect.objectContaining({ call_id: 'call_1', tool: 'sse_echo', ok: true, result: 'echo: legacy' }),
    ]);
    expect(mcp.calls.slice(callsBefore).map((call) => call.headers.authorization)).toEqual([
      `Bearer ${MCP_TOKEN}`,
    ]);
  });

  it('an MCP server URL the SSRF guard denies (cloud metadata) ends the task FORBIDDEN before any request', async () => {
    behaviours.set('use the metadata server', callOnce('meta_echo', { text: 'x' }));
    const events = await runTask('use the metadata server', {
      servers: [
        {
          name: 'meta',
          transport: { type: 'streamable-http', url: 'http://169.254.169.254/mcp' },
          tool_prefix: 'meta_',
        },
      ],
    });
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'FORBIDDEN' } });
  });
});

describe('a recalled MCP action', () => {
  it('runs as a dynamic tool on the task’s MCP server, with the action’s fixed arguments', async () => {
    const recallActions = await announcedTool('recall_actions');
    const seen: string[][] = [];
    behaviours.set('recall and run the patient action', (request) => {
      seen.push(offeredTools(request));
      switch (toolResultsSoFar(request)) {
        case 0:
          return {
            toolCalls: [
              {
                id: 'call_recall',
                name: 'recall_actions',
                arguments: { kn_id: 'kn', at_id: 'at', unique_identity: { patient_id: 'p-7' } },
              },
            ],
          };
        case 1:
          return { toolCalls: [{ id: 'call_action', name: 'echo_for_patient', arguments: {} }] };
        default:
          return { content: 'action ran' };
      }
    });
    const callsBefore = mcp.calls.length;
    const events = await runTask('recall and run the patient action', {
      tools: [recallActions],
      servers: [{ ...kitServer(), tool_filter: { allow: [] } }],
    });

    // The server offers none of its tools directly (allow: []); the recalled action joins after recall.
    expect(seen[0]).toEqual(['recall_actions']);
    expect(seen[1]).toEqual(['recall_actions', 'echo_for_patient']);
    expect(eventsOf(events, 'tool_result').map((event) => event.data)).toEqual([
      expect.objectContaining({ call_id: 'call_recall', ok: true }),
      expect.objectContaining({ call_id: 'call_action', ok: true, result: 'echo: patient p-7' }),
    ]);
    const call = mcp.calls.slice(callsBefore).find((recorded) => recorded.tool === 'echo');
    expect(call?.arguments).toEqual({ text: 'patient p-7' });
    expect(call?.headers.authorization).toBe(`Bearer ${MCP_TOKEN}`);
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'action ran' } });
  });

  it('a recalled action naming a server the agent does not bind fails as NOT_FOUND and nothing is called', async () => {
    const recallActions = await announcedTool('recall_actions');
    behaviours.set('recall onto an unbound server', (request) => {
      switch (toolResultsSoFar(request)) {
        case 0:
          return {
            toolCalls: [
              {
                id: 'call_recall',
                name: 'recall_actions',
                arguments: { kn_id: 'kn', at_id: 'at', unique_identity: { patient_id: 'p-7' } },
              },
            ],
          };
        case 1:
          return { toolCalls: [{ id: 'call_action', name: 'echo_for_patient', arguments: {} }] };
        default:
          return { content: 'could not run it' };
      }
    });
    const callsBefore = mcp.calls.length;
    const events = await runTask('recall onto an unbound server', { tools: [recallActions], servers: [] });
    expect(eventsOf(events, 'tool_result').at(-1)?.data).toMatchObject({
      call_id: 'call_action',
      ok: false,
      error: { code: 'NOT_FOUND', detail: { server: 'kit' } },
    });
    expect(mcp.calls.length).toBe(callsBefore);
  });
});
