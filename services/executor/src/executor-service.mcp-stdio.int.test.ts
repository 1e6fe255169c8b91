// An MCP server over stdio, started in the script sandbox: an in-process executor on real NATS with a
// scripts directory, a scripted model, and the test kit's stdio MCP server (the official SDK) launched by a
// one-line script in that directory. The server's credential reaches it as an environment variable (auth
// type `env`) and nowhere else.
import { realpath } from 'node:fs/promises';
import { chmod, mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { followTaskEvents } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type McpServerConnection,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import { ScriptRunner } from '@agentmesh/script-runner';
import {
  MCP_STDIO_SERVER_SCRIPT,
  startNats,
  startScriptedModel,
  type ChatCompletionRequest,
  type ModelStep,
  type NatsServer,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordWire, startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { userText, toolResultsSoFar } from './__fixtures__/model-requests.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const SECRET = `canary-stdio-secret-${crypto.randomUUID()}`;
const vaultKeys = generateVaultKeyPair('exec-mcp-stdio-test');
/** The test kit's package (its built server and package.json) and the workspace's node_modules it imports. */
const TESTKIT_DIR = dirname(dirname(dirname(MCP_STDIO_SERVER_SCRIPT)));
const NODE_MODULES = join(fileURLToPath(new URL('../../../', import.meta.url)), 'node_modules');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let executor: RunningService;
let root: string;
let isolated: boolean;
let wire: { subject: string; text: string }[];
const logLines: string[] = [];
const behaviours = new Map<string, (request: ChatCompletionRequest) => ModelStep>();

const stdioServer = (): McpServerConnection => ({
  name: 'kit_stdio',
  transport: {
    type: 'stdio',
    command: 'node',
    args: ['mcp/kit-server.mjs'],
    env: { KIT_MODE: 'test' },
    allow_read: [TESTKIT_DIR, NODE_MODULES],
  },
  auth: { type: 'env', mapping: [{ source: 'KIT_SECRET', target: 'KIT_SECRET' }] },
  tool_filter: { allow: ['echo', 'whoami', 'count_slowly'] },
});

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'executor-mcp-stdio-'));
  await chmod(root, 0o755);
  const scriptsDir = join(root, 'scripts');
  const cacheDir = join(root, 'cache');
  await mkdir(join(scriptsDir, 'mcp'), { recursive: true, mode: 0o755 });
  await mkdir(cacheDir, { mode: 0o755 });
  await chmod(scriptsDir, 0o755);
  // The server script lives outside the scripts directory; a one-line script inside it loads it.
  await writeFile(
    join(scriptsDir, 'mcp', 'kit-server.mjs'),
    `import ${JSON.stringify(await realpath(MCP_STDIO_SERVER_SCRIPT))};\n`,
    {
      mode: 0o644,
    },
  );
  const readable = [await realpath(TESTKIT_DIR), await realpath(NODE_MODULES)];
  isolated = (await new ScriptRunner({ baseDir: scriptsDir, cacheDir, hostEnv: process.env }).capabilities())
    .isolation;

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
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    logLines,
    env: {
      LLM_MAX_RETRIES: '0',
      SCRIPTS_DIR: scriptsDir,
      SCRIPTS_CACHE_DIR: cacheDir,
      SCRIPT_ALLOW_READ_PATHS: readable.join(','),
      SCRIPT_REQUIRE_ISOLATION: String(isolated),
      // Node needs about 600 MB of data segment to start (see the script runner's README).
      SCRIPT_MEMORY_MB: '2048',
    },
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await model?.stop();
  await nats?.stop();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

async function runTask(user: string, account = ACCOUNT): Promise<TaskEvent[]> {
  const traceId = newTraceId();
  const task = assembledTask({
    traceId,
    accountId: account,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key', KIT_SECRET: SECRET },
    sealFor: vaultKeys,
    userMessage: user,
    mcpServers: [stdioServer()],
  });
  await js.publish(taskAssembledSubject(account), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: account,
    traceId,
    signal: AbortSignal.timeout(60_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

function whoamiThenAnswer(request: ChatCompletionRequest): ModelStep {
  if (toolResultsSoFar(request) === 0) {
    return {
      toolCalls: [
        {
          id: 'call_who',
          name: 'whoami',
          arguments: { names: ['KIT_SECRET', 'KIT_MODE', 'PATH_TO_NOWHERE'] },
        },
      ],
    };
  }
  return { content: 'checked' };
}

const whoamiResult = (events: TaskEvent[]) => {
  const result = events.find((event) => event.type === 'tool_result')?.data as
    { ok: true; result: { text: string; structured_content: { set: string[] } } } | undefined;
  if (result?.ok !== true) throw new Error(`whoami failed: ${JSON.stringify(events)}`);
  const said = JSON.parse(result.result.text) as { pid: number; instance: string };
  return { ...result.result.structured_content, pid: said.pid, instance: said.instance };
};

describe('an agent whose tools come from a stdio MCP server in the script sandbox', () => {
  it('when the executor starts with a scripts directory, it logs once which sandbox mechanism is in force', () => {
    const lines = logLines.filter((line) => line.includes('script sandbox:'));
    expect(lines).toHaveLength(1);
    const line = lines[0] ?? '';
    // Whichever holds here: a cgroup per run, or the plain statement that only rlimits do.
    expect(line).toMatch(
      isolated ? /one cgroup per run: cgroup v[12]|no cgroup per run \(/ : /no namespace sandbox/,
    );
  });

  it('completes a task with tool_start/tool_result; the credential reaches the server as its variable only', async () => {
    behaviours.set('who am i', whoamiThenAnswer);
    const events = await runTask('who am i');

    expect(events.filter((event) => event.type === 'tool_start').map((event) => event.data)).toEqual([
      {
        call_id: 'call_who',
        tool: 'whoami',
        arguments: { names: ['KIT_SECRET', 'KIT_MODE', 'PATH_TO_NOWHERE'] },
      },
    ]);
    const who = whoamiResult(events);
    expect(who.set).toEqual(['KIT_SECRET', 'KIT_MODE']);
    if (isolated) expect(who.pid).toBeLessThan(100); // its own pid namespace
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: 'checked' } });
    for (const message of wire) expect(message.text).not.toContain(SECRET);
  });

  it('progress of a stdio call streams as tool_progress events', async () => {
    behaviours.set('count over stdio', (request) =>
      toolResultsSoFar(request) === 0
        ? { toolCalls: [{ id: 'call_count', name: 'count_slowly', arguments: { steps: 2 } }] }
        : { content: 'counted' },
    );
    const events = await runTask('count over stdio');
    expect(events.filter((event) => event.type === 'tool_progress').map((event) => event.data)).toEqual([
      { call_id: 'call_count', tool: 'count_slowly', progress: 1, total: 2, message: 'step 1 of 2' },
      { call_id: 'call_count', tool: 'count_slowly', progress: 2, total: 2, message: 'step 2 of 2' },
    ]);
  });

  it('tasks of one account reuse the running server process; another account gets its own', async () => {
    behaviours.set('who am i again', whoamiThenAnswer);
    const first = whoamiResult(await runTask('who am i again'));
    const second = whoamiResult(await runTask('who am i again'));
    const other = whoamiResult(await runTask('who am i again', 'globex'));
    expect(second.instance).toBe(first.instance);
    expect(other.instance).not.toBe(first.instance);
    expect(other.set).toEqual(['KIT_SECRET', 'KIT_MODE']);
  });
});
