// Script tools on the real script runner: every test runs real Python or Node processes in the sandbox.
import { execFileSync } from 'node:child_process';
import { ScriptRunner } from '@agentmesh/script-runner';
import { waitFor } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createScriptWorkspace,
  entryPointTool,
  executePythonScriptTool,
  sleepyToolWithTimeout,
  shoutTool,
  wordCountTool,
  wrongShapeTool,
  type ScriptWorkspace,
} from '../../__fixtures__/script-workspace.js';
import { executeScriptTool, ScriptTools } from '../native/index.js';

let workspace: ScriptWorkspace;
let scripts: ScriptTools;
const ctx = () => ({ callId: 'call_1', signal: new AbortController().signal, account: { id: 'acme' } });

beforeAll(async () => {
  workspace = await createScriptWorkspace();
  const runner = new ScriptRunner({
    baseDir: workspace.scriptsDir,
    cacheDir: workspace.cacheDir,
    hostEnv: process.env,
    // Hosts that cannot build the namespace sandbox still run the scripts (these tests are about the tools).
    requireIsolation: false,
  });
  scripts = new ScriptTools({ runner, defaultTimeoutMs: 20_000, maxTimeoutMs: 30_000 });
});

afterAll(async () => {
  await workspace?.remove();
});

describe('execute_script (seed 003 generic script tool)', () => {
  it('runs a Python script with inputData on stdin and answers the seed result with its output', async () => {
    const outcome = await executeScriptTool(scripts).run(
      { scriptPath: 'python/word_count.py', inputData: { text: 'three little words' } },
      ctx(),
    );
    expect(outcome).toMatchObject({
      ok: true,
      result: { success: true, outputData: { words: 3, language: 'python' } },
    });
  });

  it('runs a Node script, its language taken from the extension', async () => {
    const outcome = await executeScriptTool(scripts).run(
      { scriptPath: 'node/shout.mjs', inputData: { text: 'hello' } },
      ctx(),
    );
    expect(outcome).toMatchObject({
      ok: true,
      result: { outputData: { shout: 'HELLO', language: 'nodejs' } },
    });
  });

  it('a path outside the scripts directory is refused as FORBIDDEN (SecurityError) without running anything', async () => {
    const outcome = await executeScriptTool(scripts).run(
      { scriptPath: '../../etc/passwd', language: 'python' },
      ctx(),
    );
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'FORBIDDEN', detail: { type: 'SecurityError' } },
    });
  });

  it('a script that exits non-zero is a TOOL_ERROR carrying its exit code and stderr', async () => {
    const outcome = await executeScriptTool(scripts).run({ scriptPath: 'python/fails.py' }, ctx());
    expect(outcome).toMatchObject({
      ok: false,
      error: {
        code: 'TOOL_ERROR',
        message: expect.stringMatching(/^ScriptError: /),
        detail: { type: 'ScriptError', exit_code: 3, details: expect.stringContaining('no input for me') },
      },
    });
  });

  it('a path whose language cannot be told is INVALID_REQUEST naming the languages', async () => {
    const outcome = await executeScriptTool(scripts).run({ scriptPath: 'python/word_count' }, ctx());
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'INVALID_REQUEST', message: expect.stringContaining('python, nodejs, bun') },
    });
  });

  it('a timeout the model asks for is honoured: the script is stopped with TOOL_TIMEOUT', async () => {
    const outcome = await executeScriptTool(scripts).run(
      { scriptPath: 'python/sleepy.py', timeoutMs: 500 },
      ctx(),
    );
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'TOOL_TIMEOUT', detail: { type: 'TimeoutError' } },
    });
  });

  // The script sleeps 60 s and may run 30 s: an outcome within this test's own deadline (a bound on
  // waiting, not a measured duration) can only come from the cancellation killing it.
  it(
    'a cancelled task kills the running script at once: CANCELLED, and no process of it is left',
    { timeout: 20_000 },
    async () => {
      const abort = new AbortController();
      const running = executeScriptTool(scripts).run(
        { scriptPath: 'python/sleepy.py', timeoutMs: 30_000 },
        { ...ctx(), signal: abort.signal },
      );
      await waitFor(() => sleepyProcesses().length > 0, {
        description: 'the script to start',
        timeoutMs: 10_000,
      });
      abort.abort();
      const outcome = await running;

      expect(outcome).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
      expect(sleepyProcesses()).toEqual([]);
    },
  );
});

describe('how many scripts run at once', () => {
  it(
    'with one run allowed, a second call waits while the first runs, and cancelling the waiting call ends it CANCELLED without ever starting it',
    { timeout: 30_000 },
    async () => {
      const runner = new ScriptRunner({
        baseDir: workspace.scriptsDir,
        cacheDir: workspace.cacheDir,
        hostEnv: process.env,
        requireIsolation: false,
      });
      const bounded = new ScriptTools({
        runner,
        defaultTimeoutMs: 20_000,
        maxTimeoutMs: 30_000,
        maxConcurrentRuns: 1,
      });
      const first = new AbortController();
      const second = new AbortController();
      const running = executeScriptTool(bounded).run(
        { scriptPath: 'python/sleepy.py', timeoutMs: 30_000 },
        { ...ctx(), signal: first.signal },
      );
      await waitFor(() => sleepyProcesses().length > 0, {
        description: 'the first script to start',
        timeoutMs: 10_000,
      });
      const waiting = executeScriptTool(bounded).run(
        { scriptPath: 'python/sleepy.py', timeoutMs: 30_000 },
        { ...ctx(), signal: second.signal },
      );
      // The second call waits for the only run, which the first holds.
      await waitFor(() => bounded.waitingRuns === 1, { description: 'the second call to wait for a run' });
      second.abort();
      expect(await waiting).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
      expect(bounded.waitingRuns).toBe(0);
      first.abort();
      expect(await running).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
      // The slot came back: a third call runs.
      const third = await executeScriptTool(bounded).run(
        { scriptPath: 'python/word_count.py', inputData: { text: 'one two' } },
        ctx(),
      );
      expect(third).toMatchObject({ ok: true, result: { outputData: { words: 2 } } });
    },
  );
});

describe('SCRIPT tools from *.tool.json', () => {
  it("when a tool names an entryPoint, that function of the script gets the model's arguments and answers the output", async () => {
    await expect(scripts.runTool(entryPointTool(), { text: 'one two' }, ctx())).resolves.toEqual({
      ok: true,
      result: { words: 2, by: 'count' },
    });
  });

  it("when a tool file sets its own timeoutMs, a call is stopped at it with TOOL_TIMEOUT, not at the executor's default", async () => {
    const outcome = await scripts.runTool(sleepyToolWithTimeout(400), {}, ctx());
    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_TIMEOUT' } });
    if (!outcome.ok) expect(outcome.error.message).toContain('400 ms');
  });

  it("an external-script tool gets the model's arguments as its input and answers its output", async () => {
    await expect(scripts.runTool(wordCountTool(), { text: 'a b c d' }, ctx())).resolves.toEqual({
      ok: true,
      result: { words: 4, language: 'python' },
    });
    await expect(scripts.runTool(shoutTool(), { text: 'quiet' }, ctx())).resolves.toEqual({
      ok: true,
      result: { shout: 'QUIET', language: 'nodejs' },
    });
  });

  it("output that does not match the tool's declared output schema is a ScriptError", async () => {
    const outcome = await scripts.runTool(wrongShapeTool(), { text: 'x' }, ctx());
    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'TOOL_ERROR', detail: { type: 'ScriptError' } },
    });
  });

  it('the seed 003 service-method tool (ExternalScriptExecutionService.executeScript) runs the script the model names', async () => {
    const outcome = await scripts.runTool(
      executePythonScriptTool(),
      { scriptPath: 'python/word_count.py', inputData: { text: 'one two' } },
      ctx(),
    );
    expect(outcome).toMatchObject({ ok: true, result: { success: true, outputData: { words: 2 } } });
  });

  it('a service-method tool naming another service is NOT_FOUND', async () => {
    const tool = executePythonScriptTool();
    const other = {
      ...tool,
      handler: { type: 'service-method' as const, service_name: 'Mailer', method_name: 'send' },
    };
    await expect(scripts.runTool(other, { scriptPath: 'x.py' }, ctx())).resolves.toMatchObject({
      ok: false,
      error: { code: 'NOT_FOUND', message: expect.stringContaining('Mailer.send') },
    });
  });
});

describe('securityContext.requiredCapabilities against SCRIPT_CAPABILITIES', () => {
  /** A real runner that counts the scripts it was asked to run. */
  class CountingRunner extends ScriptRunner {
    runs = 0;
    override run(...args: Parameters<ScriptRunner['run']>): ReturnType<ScriptRunner['run']> {
      this.runs += 1;
      return super.run(...args);
    }
  }

  const needing = (...capabilities: string[]) => {
    const tool = wordCountTool();
    return { ...tool, security_context: { ...tool.security_context, required_capabilities: capabilities } };
  };
  const scriptsProviding = (capabilities: string[]) => {
    const runner = new CountingRunner({
      baseDir: workspace.scriptsDir,
      cacheDir: workspace.cacheDir,
      hostEnv: process.env,
      requireIsolation: false,
    });
    return {
      runner,
      tools: new ScriptTools({ runner, defaultTimeoutMs: 20_000, maxTimeoutMs: 30_000, capabilities }),
    };
  };

  it('when a tool requires a capability the executor does not provide, the call fails SERVICE_UNAVAILABLE naming it, and no script runs', async () => {
    const { runner, tools } = scriptsProviding(['gpu']);

    const outcome = await tools.runTool(needing('gpu', 'cuda-12'), { text: 'a b' }, ctx());

    expect(outcome).toEqual({
      ok: false,
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('(cuda-12)'),
        detail: { tool_id: 'text:word-count', missing_capabilities: ['cuda-12'] },
      },
    });
    expect(runner.runs).toBe(0);
  });

  it('when the executor provides no capabilities (the default), a tool requiring one fails before running', async () => {
    const { runner, tools } = scriptsProviding([]);

    const outcome = await tools.runTool(needing('gpu'), { text: 'a b' }, ctx());

    expect(outcome).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE' } });
    expect(runner.runs).toBe(0);
  });

  it('when the executor provides every capability a tool requires, the script runs', async () => {
    const { runner, tools } = scriptsProviding(['cuda-12', 'gpu', 'ffmpeg']);

    const outcome = await tools.runTool(needing('gpu', 'cuda-12'), { text: 'a b' }, ctx());

    expect(outcome).toEqual({ ok: true, result: { words: 2, language: 'python' } });
    expect(runner.runs).toBe(1);
  });
});

/** Pids of this workspace's sleeping script still alive. */
function sleepyProcesses(): string[] {
  try {
    return execFileSync('pgrep', ['-f', `${workspace.scriptsDir}/python/sleepy.py`], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}
