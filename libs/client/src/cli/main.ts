#!/usr/bin/env node
/**
 * The `agentmesh` executable: the only place that reads the process (argv, environment, signals,
 * terminals); everything else gets its configuration passed in.
 */
import { runCli } from './run-cli.js';

const interrupt = new AbortController();
process.once('SIGINT', () => interrupt.abort());

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: { url: process.env.AGENTMESH_URL, apiKey: process.env.AGENTMESH_API_KEY },
  signal: interrupt.signal,
  sharedTerminal: process.stdout.isTTY === true && process.stderr.isTTY === true,
});
