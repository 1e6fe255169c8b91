/**
 * `npm start` (scripts/start-mesh.mjs --no-build, on this checkout's built packages) as a process of a
 * test, and its printed lines pasted into a shell run from another directory with nothing of the test's
 * environment but a plain PATH: what a newcomer does in a second terminal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findFreePort, waitFor } from '@agentmesh/testkit';

const script = fileURLToPath(new URL('../../../scripts/start-mesh.mjs', import.meta.url));

export interface StartedMesh {
  child: ChildProcess;
  gatewayUrl: string;
  output(): string;
  exit: Promise<[number | null, NodeJS.Signals | null]>;
  /** SIGTERM to the start script; resolves with its exit code. */
  stop(): Promise<number | null>;
}

const started: StartedMesh[] = [];

/** Starts the script and resolves once it printed its doors (`press Ctrl-C to stop`). */
export async function startMeshScript(
  options: { args?: string[]; env?: Record<string, string> } = {},
): Promise<StartedMesh> {
  const port = await findFreePort();
  const env: NodeJS.ProcessEnv = { ...process.env, HTTP_PORT: String(port) };
  // Nothing of this shell's NATS or gateway settings: the script's own defaults are under test.
  for (const name of [
    'NATS_URL',
    'NATS_USER',
    'NATS_PASSWORD',
    'NATS_PORT',
    'TRUST_ACCOUNT_HEADERS',
    'ADMIN_API_KEYS',
    'MODEL_BASE_URL',
    'AGENTMESH_DATA_DIR',
  ])
    delete env[name];
  Object.assign(env, options.env);
  // Started from another directory than the clone: the script finds its own root.
  const child = spawn(process.execPath, [script, '--no-build', ...(options.args ?? [])], {
    cwd: mkdtempSync(join(tmpdir(), 'agentmesh-start-cwd-')),
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (code, signal) => resolve([code, signal])),
  );
  let exited = false;
  void exit.then(() => (exited = true));
  const mesh: StartedMesh = {
    child,
    gatewayUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    exit,
    stop: async () => {
      if (!exited) child.kill('SIGTERM');
      return (await exit)[0];
    },
  };
  started.push(mesh);
  await waitFor(() => exited || output.includes('press Ctrl-C to stop'), {
    timeoutMs: 90_000,
    description: `npm start to come up; output so far:\n${output}`,
  });
  if (exited) throw new Error(`npm start exited before it was up:\n${output}`);
  return mesh;
}

/** Stops every mesh a test left running (the script stops its whole tree on SIGTERM). */
export async function stopAllMeshScripts(): Promise<void> {
  await Promise.all(started.splice(0).map((mesh) => mesh.stop()));
}

/** The value a `[mesh] …` line prints after `label` (up to the next space). */
export function printedValue(output: string, label: RegExp): string {
  const match = new RegExp(`^\\[mesh\\] ${label.source}\\s*(\\S+)$`, 'm').exec(output);
  if (!match?.[1]) throw new Error(`not printed: ${label}\n${output}`);
  return match[1];
}

/** The indented command line printed right after the `[mesh] …` line that starts with `header`. */
export function lineAfter(output: string, header: string): string {
  const lines = output.split('\n');
  const index = lines.findIndex((line) => line.startsWith(`[mesh] ${header}`));
  const next = index >= 0 ? lines[index + 1] : undefined;
  if (next === undefined || !next.startsWith('  ')) throw new Error(`no line after "${header}":\n${output}`);
  return next.slice(2);
}

export interface Pasted {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `line` verbatim with `sh -c` in a fresh temporary directory, with a plain PATH and a temporary
 * HOME only: no variable of the test, no Node.js of the test on PATH, not the clone as working directory.
 */
export function paste(line: string, suffix = ''): Promise<Pasted> {
  const cwd = mkdtempSync(join(tmpdir(), 'agentmesh-paste-'));
  const child = spawn('sh', ['-c', `${line}${suffix}`], {
    cwd,
    env: { PATH: '/usr/bin:/bin', HOME: cwd },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}
