import { copyFile, link, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptError, ScriptErrorType } from './errors.js';
import type { ScriptRunner } from './script-runner.js';
import { createWorkspace, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;
let runner: ScriptRunner;

beforeAll(async () => {
  workspace = await createWorkspace();
  runner = workspace.runner({ maxOutputBytes: 1024 * 1024 });
});
afterAll(() => workspace.remove());

const capabilities = await (async () => {
  const probe = await createWorkspace();
  try {
    return await probe.runner().capabilities();
  } finally {
    await probe.remove();
  }
})();

describe('running scripts', () => {
  it('when a python script is called, it gets the input on stdin and its JSON stdout is the output', async () => {
    const result = await runner.run({
      toolId: 'test:echo',
      scriptPath: 'echo.py',
      language: 'python',
      inputData: { n: 1, text: 'ü' },
    });

    expect(result.error).toBeUndefined();
    expect(result.success).toBe(true);
    expect(result.outputData).toMatchObject({
      echo: { n: 1, text: 'ü' },
      language: 'python',
      cwd: workspace.baseDir,
    });
  });

  it('when a node script is called, it runs the same way, as the unprivileged sandbox user', async () => {
    const result = await runner.run({
      toolId: 'test:echo',
      scriptPath: 'echo.mjs',
      language: 'nodejs',
      inputData: { list: [1, 2] },
    });

    expect(result.error).toBeUndefined();
    expect(result.outputData).toMatchObject({ echo: { list: [1, 2] }, language: 'nodejs', uid: 65534 });
  });

  it.skipIf(capabilities.interpreters.nodejs === undefined)(
    'when the node interpreter lives outside the system directories, the sandbox shows its install and it runs',
    async () => {
      const bin = join(workspace.root, 'opt', 'node-install', 'bin');
      await mkdir(bin, { recursive: true, mode: 0o755 });
      const node = join(bin, 'node');
      const system = capabilities.interpreters.nodejs ?? '';
      await link(system, node).catch(() => copyFile(system, node));
      const moved = workspace.runner({ languages: { nodejs: { command: node } } });

      const result = await moved.run({
        toolId: 'test:echo',
        scriptPath: 'echo.mjs',
        language: 'nodejs',
        inputData: { from: 'elsewhere' },
      });

      expect(result.error).toBeUndefined();
      expect(result.outputData).toMatchObject({ echo: { from: 'elsewhere' }, uid: 65534 });
    },
  );

  it.skipIf(capabilities.interpreters.bun === undefined)(
    'when bun is installed, a script runs with bun (skipped: bun is not installed on this host)',
    async () => {
      const result = await runner.run({ toolId: 'test:echo', scriptPath: 'echo.mjs', language: 'bun' });
      expect(result.outputData).toMatchObject({ echo: {} });
    },
  );

  it('when an input carries shell syntax, the script receives it as plain data and nothing is run', async () => {
    const sentinel = join(workspace.baseDir, 'echo.py');
    const hostile = { arg: '; rm -rf / #', other: '$(touch /tmp/pwned) `id` && echo hi | cat > x' };

    const result = await runner.run({
      toolId: 'test:echo',
      scriptPath: 'echo.py',
      language: 'python',
      inputData: hostile,
    });

    expect(result.outputData?.['echo']).toEqual(hostile);
    expect(existsSync(sentinel)).toBe(true);
    expect(existsSync('/tmp/pwned')).toBe(false);
  });

  it('when a python tool names an entryPoint, that function is called with the input and its return value is the output', async () => {
    const greet = await runner.run({
      toolId: 'test:fn',
      scriptPath: 'functions.py',
      language: 'python',
      entryPoint: 'greet',
      inputData: { name: 'Ada' },
    });
    expect(greet).toMatchObject({ success: true, outputData: { greeting: 'hello Ada' } });

    const later = await runner.run({
      toolId: 'test:fn',
      scriptPath: 'functions.py',
      language: 'python',
      entryPoint: 'later',
      inputData: { n: 41 },
    });
    expect(later).toMatchObject({ success: true, outputData: { later: 42 } });
  });

  it('when a node tool names an entryPoint, its exported function (async too) is called the same way', async () => {
    const result = await runner.run({
      toolId: 'test:fn',
      scriptPath: 'functions.mjs',
      language: 'nodejs',
      entryPoint: 'later',
      inputData: { n: 1 },
    });
    expect(result.error).toBeUndefined();
    expect(result.outputData).toEqual({ later: 2 });
  });

  it('when the entryPoint names no function of the script, the run fails saying so; a name that is no identifier is refused', async () => {
    const missing = await runner.run({
      toolId: 'test:fn',
      scriptPath: 'functions.py',
      language: 'python',
      entryPoint: 'nope',
    });
    expect(missing.error?.type).toBe(ScriptErrorType.SCRIPT);
    expect(missing.error?.details).toContain('no function nope');

    const injected = await runner.run({
      toolId: 'test:fn',
      scriptPath: 'functions.py',
      language: 'python',
      entryPoint: 'greet; import os',
    });
    expect(injected.error?.message).toContain('entryPoint must be a function name');
  });

  it('when a script prints text that is not JSON, the result is a ScriptError quoting the output', async () => {
    const result = await runner.run({ toolId: 'test:bad', scriptPath: 'not-json.py', language: 'python' });

    expect(result.success).toBe(false);
    expect(result.error).toMatchObject({
      type: ScriptErrorType.SCRIPT,
      code: 'TOOL_ERROR',
      retryable: false,
    });
    expect(result.error?.message).toContain('not JSON');
    expect(result.error?.details).toContain('hello, this is not JSON');
  });

  it('when a script exits with a non-zero code, the ScriptError carries the code and its stderr', async () => {
    const result = await runner.run({ toolId: 'test:fails', scriptPath: 'fails.py', language: 'python' });

    expect(result.error).toMatchObject({ type: ScriptErrorType.SCRIPT, exitCode: 3, signal: null });
    expect(result.error?.details).toContain('something went wrong in the script');
    expect(result.logs?.join('\n')).toContain('something went wrong in the script');
  });

  it('when a script exits 0 but writes to stderr, it has failed (seed 003), and the ScriptError carries the stderr', async () => {
    const result = await runner.run({ toolId: 'test:warns', scriptPath: 'warns.py', language: 'python' });

    expect(result.success).toBe(false);
    expect(result.error).toMatchObject({ type: ScriptErrorType.SCRIPT, exitCode: 0, signal: null });
    expect(result.error?.message).toContain('stderr');
    expect(result.error?.details).toContain('warning: this API is deprecated');
  });

  it('when stderr is not an error by policy, the same script succeeds and its stderr is in the logs', async () => {
    const lenient = workspace.runner({ stderrIsError: false });
    const result = await lenient.run({ toolId: 'test:warns', scriptPath: 'warns.py', language: 'python' });

    expect(result).toMatchObject({ success: true, outputData: { ok: true } });
    expect(result.logs?.join('\n')).toContain('warning: this API is deprecated');
  });

  it('when a script writes 10 MB to stdout, reading stops at the output limit and the run is a ScriptError', async () => {
    // A runner that stopped reading without killing the script would leave it blocked on a full pipe
    // until the time limit, and the run would be a TimeoutError: the error type shows the kill, no clock.
    const result = await runner.run({
      toolId: 'test:flood',
      scriptPath: 'flood.py',
      language: 'python',
      inputData: { megabytes: 10 },
    });

    expect(result.error?.type).toBe(ScriptErrorType.SCRIPT);
    expect(result.error?.message).toContain('output limit was hit');
    expect(result.error?.message).toContain(String(1024 * 1024));
  });

  it('when the input is larger than the input limit, the script is not started', async () => {
    const small = workspace.runner({ maxInputBytes: 100 });
    const result = await small.run({
      toolId: 'test:echo',
      scriptPath: 'echo.py',
      language: 'python',
      inputData: { text: 'x'.repeat(200) },
    });

    expect(result.error).toMatchObject({ type: ScriptErrorType.INPUT, code: 'PAYLOAD_TOO_LARGE' });
  });

  it('when the output does not match the tool output schema, the run is a ScriptError naming the field', async () => {
    const outputSchema = {
      type: 'object',
      properties: { language: { type: 'string', enum: ['cobol'] } },
      required: ['language'],
    };
    const result = await runner.run({
      toolId: 'test:echo',
      scriptPath: 'echo.py',
      language: 'python',
      outputSchema,
    });

    expect(result.error?.type).toBe(ScriptErrorType.SCRIPT);
    expect(result.error?.details).toContain('/language');
  });

  it('when the output matches the tool output schema, the run succeeds', async () => {
    const outputSchema = {
      type: 'object',
      properties: { language: { const: 'python' } },
      required: ['echo'],
    };
    const result = await runner.run({
      toolId: 'test:echo',
      scriptPath: 'echo.py',
      language: 'python',
      outputSchema,
    });

    expect(result.success).toBe(true);
  });

  it('when a caller prefers exceptions, runOrThrow throws the error class of the failure', async () => {
    await expect(
      runner.runOrThrow({ toolId: 'test:bad', scriptPath: 'not-json.py', language: 'python' }),
    ).rejects.toBeInstanceOf(ScriptError);
  });
});
