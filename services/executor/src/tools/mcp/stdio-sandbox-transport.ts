/**
 * The MCP stdio transport for a server started in the script sandbox (`ScriptRunner.start`): JSON-RPC
 * messages as lines on the sandboxed process's stdin and stdout. The process is started when the SDK's client
 * starts the transport and killed when it closes it; a process that exits by itself closes the transport,
 * and the session is dropped from the pool (the next task starts a new one). The server gets the sandbox's
 * scrubbed environment plus its definition's `env` and the credentials its `auth` maps into variables.
 */
import type { McpStdioTransport, ScriptLanguage } from '@agentmesh/protocol';
import type { ScriptRunner, ScriptSession } from '@agentmesh/script-runner';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpServerError } from '../tool-errors.js';
import type { McpStdioLauncher } from './mcp-transports.js';

const LANGUAGE_OF_COMMAND: Readonly<Record<McpStdioTransport['command'], ScriptLanguage>> = {
  node: 'nodejs',
  python: 'python',
  bun: 'bun',
};

/** Starts stdio servers with `runner`, under the rules of script tools. */
export function sandboxStdioLauncher(runner: ScriptRunner): McpStdioLauncher {
  return { launch: (transport, env) => new StdioSandboxTransport(runner, transport, env) };
}

export class StdioSandboxTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  #session: ScriptSession | undefined;
  readonly #buffer = new ReadBuffer();
  #closed = false;
  #delivery: Promise<void> = Promise.resolve();

  constructor(
    private readonly runner: ScriptRunner,
    private readonly server: McpStdioTransport,
    private readonly credentialEnv: Readonly<Record<string, string>>,
  ) {}

  async start(): Promise<void> {
    const [scriptPath, ...args] = this.server.args;
    if (scriptPath === undefined)
      throw new McpServerError('a stdio MCP server names its script first in args');
    const allowRead = this.server.allow_read;
    let session: ScriptSession;
    try {
      session = await this.runner.start({
        toolId: `mcp:${scriptPath}`,
        scriptPath,
        language: LANGUAGE_OF_COMMAND[this.server.command],
        args,
        env: { ...(this.server.env ?? {}), ...this.credentialEnv },
        ...(allowRead === undefined ? {} : { securityContext: { fileAccess: { allowRead } } }),
      });
    } catch (error) {
      throw new McpServerError(
        `the stdio MCP server ${scriptPath} could not be started in the sandbox: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    this.#session = session;
    session.stdout.on('data', (chunk: Buffer) => {
      this.#buffer.append(chunk);
      for (;;) {
        let message: JSONRPCMessage | null;
        try {
          message = this.#buffer.readMessage();
        } catch (error) {
          this.onerror?.(error instanceof Error ? error : new Error(String(error)));
          continue;
        }
        if (message === null) break;
        this.#deliver(message);
      }
    });
    session.stdout.on('error', (error: Error) => this.onerror?.(error));
    void session.exited.then((exit) => {
      if (exit.memoryLimitExceeded === true) {
        this.onerror?.(
          new McpServerError(
            "the stdio server's processes together went past their memory limit (SCRIPT_RUN_MEMORY_MB) and were killed",
          ),
        );
      }
      this.#ended();
    });
  }

  /**
   * One message per turn of the event loop, in order. The SDK handles a notification in a microtask but a
   * response at once: a progress notification and the result read in one chunk would otherwise see the
   * result first, and the notification be dropped as belonging to a finished request.
   */
  #deliver(message: JSONRPCMessage): void {
    this.#delivery = this.#delivery.then(
      () =>
        new Promise<void>((resolve) =>
          setImmediate(() => {
            if (!this.#closed) this.onmessage?.(message);
            resolve();
          }),
        ),
    );
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#session?.stdin;
    if (stdin === undefined || this.#closed)
      return Promise.reject(new McpServerError('the stdio server is not running'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', resolve);
    });
  }

  async close(): Promise<void> {
    const session = this.#session;
    if (session !== undefined) await session.stop();
    this.#ended();
  }

  #ended(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#buffer.clear();
    this.onclose?.();
  }
}
