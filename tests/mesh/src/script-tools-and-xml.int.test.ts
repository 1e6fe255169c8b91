/**
 * Issue 5 through the whole mesh: `*.tool.json` files dropped into the assembler's tools directory
 * while it runs become callable (a malformed one is reported and skipped); the scripted model calls a
 * Python and a Node script tool that run in the executor's sandbox; and a model speaking seed 003's
 * `<ACTION>` protocol produces the same event sequence as one using function calling.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskEvent } from '@agentmesh/protocol';
import { startScriptedModel, waitFor, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, eventTypes, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let root: string;
let toolsDir: string;

const toolJson = (toolId: string, scriptPath: string, language: string) => ({
  toolId,
  displayName: toolId,
  description: `Runs ${scriptPath}.`,
  version: '1.0.0',
  handler: { type: 'external-script', scriptPath, language },
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  tags: ['demo'],
});

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mesh-scripts-'));
  await chmod(root, 0o755);
  const scriptsDir = join(root, 'scripts');
  toolsDir = join(root, 'tools');
  await mkdir(join(scriptsDir, 'py'), { recursive: true, mode: 0o755 });
  await mkdir(join(scriptsDir, 'js'), { recursive: true, mode: 0o755 });
  await mkdir(toolsDir, { mode: 0o755 });
  await mkdir(join(root, 'cache'), { mode: 0o755 });
  await writeFile(
    join(scriptsDir, 'py', 'count.py'),
    'import json, sys\ndata = json.load(sys.stdin)\nprint(json.dumps({"words": len(data["text"].split())}))\n',
    { mode: 0o644 },
  );
  await writeFile(
    join(scriptsDir, 'js', 'shout.mjs'),
    "let raw = '';\nprocess.stdin.on('data', (c) => (raw += c));\nprocess.stdin.on('end', () => console.log(JSON.stringify({ shout: JSON.parse(raw).text.toUpperCase() })));\n",
    { mode: 0o644 },
  );
  await chmod(scriptsDir, 0o755);
  model = await startScriptedModel({ respond: () => ({ content: 'Done with the scripts.' }) });
  mesh = await startMesh({
    env: {
      assembler: { TOOLS_DIR: toolsDir },
      executor: { SCRIPTS_DIR: scriptsDir, SCRIPTS_CACHE_DIR: join(root, 'cache') },
    },
  });
  await storeModelKey(mesh);
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

async function pluginNames(): Promise<string[]> {
  const body = (await (await admin(mesh, 'GET', '/plugins?tag=demo')).json()) as {
    plugins: { name: string }[];
  };
  return body.plugins.map((plugin) => plugin.name);
}

async function run(workflowId: string, text: string): Promise<TaskEvent[]> {
  const response = await submit(mesh, {
    workflow_id: workflowId,
    user_id: 'u1',
    messages: [{ role: 'user', content: text }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  return sseEvents(mesh, trace_id);
}

it('tool files dropped in while the mesh runs become callable; a malformed one is reported and skipped', async () => {
  await writeFile(
    join(toolsDir, 'count.tool.json'),
    JSON.stringify(toolJson('demo:count-words', 'py/count.py', 'python')),
  );
  await writeFile(
    join(toolsDir, 'shout.tool.json'),
    JSON.stringify(toolJson('demo:shout', 'js/shout.mjs', 'nodejs')),
  );
  await writeFile(join(toolsDir, 'broken.tool.json'), '{"toolId": "demo:broken", "handler": ');
  await waitFor(async () => (await pluginNames()).length === 2, { timeoutMs: 20_000 });
  expect((await pluginNames()).sort()).toEqual(['demo__count-words', 'demo__shout']);
  await mesh.assembler.waitForLog((line) => JSON.stringify(line).includes('broken.tool.json'), 20_000);

  const agentModel = scriptedModel(model.baseUrl);
  for (const [workflowId, protocol] of [
    ['scripts_native', 'native'],
    ['scripts_xml', 'xml'],
  ] as const) {
    await admin(mesh, 'POST', '/agents', {
      workflow_id: workflowId,
      model: { ...agentModel, tool_protocol: protocol },
      tools: ['demo__count-words', 'demo__shout'],
    });
  }
});

let nativeEvents: TaskEvent[] = [];

it('the model calls a Python and a Node script tool; the events show their inputs and outputs', async () => {
  model.enqueue(
    { toolCalls: [{ name: 'demo__count-words', arguments: { text: 'one two three' } }] },
    { toolCalls: [{ name: 'demo__shout', arguments: { text: 'quiet please' } }] },
  );
  nativeEvents = await run('scripts_native', 'native run');
  expect(eventTypes(nativeEvents).at(-1)).toBe('done');
  const starts = nativeEvents.filter((e) => e.type === 'tool_start').map((e) => e.data);
  expect(starts).toEqual([
    expect.objectContaining({ tool: 'demo__count-words', arguments: { text: 'one two three' } }),
    expect.objectContaining({ tool: 'demo__shout', arguments: { text: 'quiet please' } }),
  ]);
  const results = nativeEvents
    .filter((e) => e.type === 'tool_result')
    .map((e) => e.data as { ok: boolean; result: unknown });
  expect(results.every((r) => r.ok)).toBe(true);
  expect(JSON.stringify(results[0]!.result)).toContain('"words":3');
  expect(JSON.stringify(results[1]!.result)).toContain('QUIET PLEASE');
});

it('a model speaking <ACTION> gets the same event sequence as the function-calling run', async () => {
  model.enqueue(
    {
      content:
        'Counting first.\n<ACTION><tool_id>demo:count-words</tool_id><inputs><input name="text"><![CDATA[one two three]]></input></inputs></ACTION>',
    },
    {
      content:
        '<ACTION><tool_id>demo:shout</tool_id><inputs><input name="text"><![CDATA[quiet please]]></input></inputs></ACTION>',
    },
  );
  const xmlEvents = await run('scripts_xml', 'xml run');
  const collapse = (types: string[]): string[] =>
    types.filter((t, i) => !(t === 'message_chunk' && types[i - 1] === t));
  // Calls parsed from ACTION text stream no arguments (tool_call_delta); native calls do.
  const withoutProse = (events: TaskEvent[]) =>
    collapse(eventTypes(events).filter((t) => t !== 'tool_call_delta')).filter(
      // The prose before an ACTION: its model call's step_finished comes between it and the tool_start.
      (t, i, all) =>
        !(t === 'message_chunk' && all[i + 1] === 'step_finished' && all[i + 2] === 'tool_start'),
    );
  expect(withoutProse(xmlEvents)).toEqual(withoutProse(nativeEvents));
  const toolData = (events: TaskEvent[]) =>
    events
      .filter((e) => e.type === 'tool_start' || e.type === 'tool_result')
      .map((e) => {
        const { call_id: _id, duration_ms: _ms, ...rest } = e.data as Record<string, unknown>;
        return [e.type, rest];
      });
  expect(toolData(xmlEvents)).toEqual(toolData(nativeEvents));
  // The observation went back to the model in seed 003's success format.
  const second = model.requests.filter((r) => JSON.stringify(r.body).includes('xml run'))[1]!;
  expect(JSON.stringify(second.body)).toContain('Tool demo:count-words executed successfully. Output:');
  // No ACTION markup leaked into the streamed prose.
  const prose = xmlEvents
    .filter((e) => e.type === 'message_chunk')
    .map((e) => (e.data as { delta: string }).delta)
    .join('');
  expect(prose).not.toContain('<ACTION>');
});
