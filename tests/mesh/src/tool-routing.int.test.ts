/**
 * Issue 10, defect 3, through the whole mesh: two executors, only one of them with a scripts directory.
 * Every task whose agent binds a script tool runs on the executor that has it (the model never hears the
 * tool is unavailable), however many run at once; before the fix, the shared consumer handed about half of
 * them to the executor without scripts.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TaskEvent } from '@agentmesh/protocol';
import { startScriptedModel, waitFor, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'mesh-routing-'));
  await chmod(root, 0o755);
  const scriptsDir = join(root, 'scripts');
  const toolsDir = join(root, 'tools');
  await mkdir(join(scriptsDir, 'py'), { recursive: true, mode: 0o755 });
  await mkdir(toolsDir, { mode: 0o755 });
  await mkdir(join(root, 'cache'), { mode: 0o755 });
  await writeFile(
    join(scriptsDir, 'py', 'count.py'),
    'import json, sys\ndata = json.load(sys.stdin)\nprint(json.dumps({"words": len(data["text"].split())}))\n',
    { mode: 0o644 },
  );
  await chmod(scriptsDir, 0o755);
  await writeFile(
    join(toolsDir, 'count.tool.json'),
    JSON.stringify({
      toolId: 'demo:count-words',
      displayName: 'Count words',
      description: 'Counts the words of a text.',
      version: '1.0.0',
      handler: { type: 'external-script', scriptPath: 'py/count.py', language: 'python' },
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    }),
  );
  // First call of a task: count its user message's words with the script; then answer.
  model = await startScriptedModel({
    respond: ({ body }) => {
      const text = String(body.messages.find((m) => m.role === 'user')?.content ?? '');
      return body.messages.some((m) => m.role === 'tool')
        ? { content: 'Counted.' }
        : { toolCalls: [{ name: 'demo__count-words', arguments: { text } }] };
    },
  });
  // The first executor has no scripts directory; the second one has.
  mesh = await startMesh({ executors: 1, env: { assembler: { TOOLS_DIR: toolsDir } } });
  await mesh.addExecutor({ SCRIPTS_DIR: scriptsDir, SCRIPTS_CACHE_DIR: join(root, 'cache') });
  await storeModelKey(mesh);
  await waitFor(async () => (await admin(mesh, 'GET', '/plugins/demo__count-words')).ok, {
    timeoutMs: 20_000,
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'word_counter',
    model: scriptedModel(model.baseUrl),
    tools: ['demo__count-words'],
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  if (root) await rm(root, { recursive: true, force: true });
});

async function run(text: string): Promise<TaskEvent[]> {
  const response = await submit(mesh, {
    workflow_id: 'word_counter',
    user_id: 'u1',
    messages: [{ role: 'user', content: text }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  return sseEvents(mesh, trace_id);
}

it('eight tasks binding a script tool, submitted at once, all run it on the executor with the scripts directory', async () => {
  const texts = Array.from({ length: 8 }, (_, index) =>
    Array.from({ length: index + 1 }, () => 'w').join(' '),
  );

  const runs = await Promise.all(texts.map((text) => run(text)));

  const results = runs.map((events) => events.find((event) => event.type === 'tool_result')?.data);
  expect(results).toEqual(
    texts.map((text) =>
      expect.objectContaining({
        ok: true,
        result: expect.objectContaining({ words: text.split(' ').length }),
      }),
    ),
  );
  expect(runs.map((events) => events.at(-1)?.type)).toEqual(texts.map(() => 'done'));
});
