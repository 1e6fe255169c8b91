// Script tools for the executor's tests: a temporary scripts directory (world-readable, since scripts run
// as an unprivileged user) with a few small Python and Node scripts, a cache directory beside it, and the
// seed 003 `*.tool.json` definitions that name them.
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fromToolJson, ToolJson, type ScriptTool } from '@agentmesh/protocol';

const SCRIPTS: Readonly<Record<string, string>> = {
  'python/word_count.py': [
    'import json, sys',
    'data = json.load(sys.stdin)',
    'text = data.get("text", "")',
    'print(json.dumps({"words": len(text.split()), "language": "python"}))',
  ].join('\n'),
  'node/shout.mjs': [
    "let raw = '';",
    "process.stdin.on('data', (chunk) => (raw += chunk));",
    "process.stdin.on('end', () => {",
    '  const data = JSON.parse(raw);',
    "  console.log(JSON.stringify({ shout: String(data.text ?? '').toUpperCase(), language: 'nodejs' }));",
    '});',
  ].join('\n'),
  'python/sleepy.py': ['import time', 'time.sleep(60)', 'print("{}")'].join('\n'),
  'python/wrong_shape.py': ['import json', 'print(json.dumps({"words": "many"}))'].join('\n'),
  'python/fails.py': ['import sys', 'sys.stderr.write("no input for me\\n")', 'sys.exit(3)'].join('\n'),
  'python/text_functions.py': [
    'def count(data):',
    '    return {"words": len(data.get("text", "").split()), "by": "count"}',
  ].join('\n'),
};

export interface ScriptWorkspace {
  readonly scriptsDir: string;
  readonly cacheDir: string;
  remove(): Promise<void>;
}

export async function createScriptWorkspace(): Promise<ScriptWorkspace> {
  const root = await mkdtemp(join(tmpdir(), 'executor-scripts-'));
  await chmod(root, 0o755);
  const scriptsDir = join(root, 'scripts');
  const cacheDir = join(root, 'cache');
  await mkdir(cacheDir, { mode: 0o755 });
  for (const [path, text] of Object.entries(SCRIPTS)) {
    const file = join(scriptsDir, path);
    await mkdir(dirname(file), { recursive: true, mode: 0o755 });
    await writeFile(file, `${text}\n`, { mode: 0o644 });
  }
  await chmod(scriptsDir, 0o755);
  return { scriptsDir, cacheDir, remove: () => rm(root, { recursive: true, force: true }) };
}

/** Seed 003 `external-script` tool: counts the words of `text` (Python), output declared. */
export function wordCountTool(): ScriptTool {
  return fromToolJson(
    ToolJson.parse({
      toolId: 'text:word-count',
      displayName: 'Word count',
      description: 'Counts the words of a text.',
      version: '1.0.0',
      handler: { type: 'external-script', scriptPath: 'python/word_count.py', language: 'python' },
      parameters: {
        type: 'object',
        properties: { text: { type: 'string', description: 'the text' } },
        required: ['text'],
      },
      output: {
        type: 'object',
        properties: { words: { type: 'integer' }, language: { type: 'string' } },
        required: ['words'],
      },
      securityContext: { fileAccess: { allowRead: ['./*'] }, networkAccess: { allowHosts: [] } },
      tags: ['text'],
    }),
  );
}

/** Seed 003 `external-script` tool: upper-cases `text` (Node). */
export function shoutTool(): ScriptTool {
  return fromToolJson(
    ToolJson.parse({
      toolId: 'text:shout',
      displayName: 'Shout',
      description: 'Upper-cases a text.',
      version: '1.0.0',
      handler: { type: 'external-script', scriptPath: 'node/shout.mjs', language: 'nodejs' },
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    }),
  );
}

/** A tool whose script answers something its declared output refuses. */
export function wrongShapeTool(): ScriptTool {
  return {
    ...wordCountTool(),
    name: 'wrong_shape',
    handler: { type: 'external-script', script_path: 'python/wrong_shape.py', language: 'python' },
  };
}

/** Seed 003 §2.2.3: the generic service-method tool. */
export function executePythonScriptTool(): ScriptTool {
  return fromToolJson(
    ToolJson.parse({
      toolId: 'core:execute-python-script',
      displayName: 'Execute Python Script',
      description: 'Executes a provided Python script securely.',
      version: '1.0.0',
      handler: {
        type: 'service-method',
        serviceName: 'ExternalScriptExecutionService',
        methodName: 'executeScript',
      },
      parameters: {
        type: 'object',
        properties: {
          scriptPath: { type: 'string' },
          inputData: { type: 'object', additionalProperties: true },
          timeoutMs: { type: 'integer', minimum: 100 },
        },
        required: ['scriptPath'],
      },
    }),
  );
}

/** Seed 003 `external-script` tool with an `entryPoint`: the script is a module and `count` is called. */
export function entryPointTool(): ScriptTool {
  return fromToolJson(
    ToolJson.parse({
      toolId: 'text:count-fn',
      displayName: 'Count (function)',
      description: 'Counts the words of a text by calling a function of a module.',
      version: '1.0.0',
      handler: {
        type: 'external-script',
        scriptPath: 'python/text_functions.py',
        language: 'python',
        entryPoint: 'count',
      },
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    }),
  );
}

/** A tool file with its own time budget (`timeoutMs`) whose script sleeps far longer. */
export function sleepyToolWithTimeout(timeoutMs: number): ScriptTool {
  return fromToolJson(
    ToolJson.parse({
      toolId: 'test:sleepy',
      displayName: 'Sleepy',
      description: 'Sleeps.',
      version: '1.0.0',
      handler: { type: 'external-script', scriptPath: 'python/sleepy.py', language: 'python' },
      timeoutMs,
    }),
  );
}
