#!/usr/bin/env node
/**
 * The `agentmesh` executable: the only place that reads the process (argv, environment, stdin, signals,
 * terminals); everything else gets its configuration passed in.
 */
import { runCli } from './run-cli.js';

const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());

try {
  process.exitCode = await runCli(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    env: {
      url: process.env.AGENTMESH_URL,
      apiKey: process.env.AGENTMESH_API_KEY,
      natsUser: process.env.AGENTMESH_NATS_USER,
      natsPassword: process.env.AGENTMESH_NATS_PASSWORD,
    },
    signal: interrupt.signal,
    sharedTerminal: process.stdout.isTTY === true && process.stderr.isTTY === true,
  });
} catch (error) {
  // A failure the CLI has no words for: one line, no stack trace (AGENTMESH_DEBUG=1 shows it).
  process.stderr.write(
    `agentmesh: unexpected failure: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  if (process.env.AGENTMESH_DEBUG === '1') console.error(error);
  process.exitCode = 1;
}
