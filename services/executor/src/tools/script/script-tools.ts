/**
 * Seed 003 script tools on the sandboxed script runner: the generic `execute_script` call (the model names
 * a script under the scripts directory) and canonical `SCRIPT` tools from `*.tool.json` files, whose handler
 * names the script (`external-script`) or the generic service method
 * (`ExternalScriptExecutionService.executeScript`). The runner's seed 003 result becomes a tool outcome;
 * a task cancelled mid-run kills the script's process group. A tool whose
 * `securityContext.requiredCapabilities` this executor does not all provide (`SCRIPT_CAPABILITIES`) fails
 * SERVICE_UNAVAILABLE before anything runs: the host lacks something the tool needs (a GPU, a binary, ...),
 * which another executor may have; nothing is refused on policy grounds, so not FORBIDDEN.
 */
import { extname } from 'node:path';
import {
  describeZodError,
  ErrorCode,
  ErrorCodeSchema,
  ScriptLanguage,
  toToolJson,
  type ScriptTool,
} from '@agentmesh/protocol';
import type { ScriptExecutionParams, ScriptExecutionResult, ScriptRunner } from '@agentmesh/script-runner';
import { z } from 'zod';
import { toolFailure, toolSuccess, type ToolOutcome } from '../index.js';

/** The seed 003 service method every `service-method` script tool of the seed names. */
export const GENERIC_SCRIPT_SERVICE = { service: 'ExternalScriptExecutionService', method: 'executeScript' };

const MIN_TIMEOUT_MS = 100;

export const ExecuteScriptInput = z.strictObject({
  scriptPath: z
    .string()
    .min(1)
    .describe("Path of the script file, relative to the scripts directory, e.g. 'reports/summary.py'"),
  language: ScriptLanguage.optional().describe(
    'Language of the script; taken from the file extension when left out (.py python, .js/.mjs/.cjs nodejs)',
  ),
  inputData: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('JSON object passed to the script on stdin'),
  timeoutMs: z
    .int()
    .min(MIN_TIMEOUT_MS)
    .optional()
    .describe('Most milliseconds the script may run; the executor caps it at its own limit'),
});
export type ExecuteScriptInput = z.output<typeof ExecuteScriptInput>;

const LANGUAGE_BY_EXTENSION: Readonly<Record<string, ScriptLanguage>> = {
  '.py': 'python',
  '.js': 'nodejs',
  '.mjs': 'nodejs',
  '.cjs': 'nodejs',
  '.ts': 'bun',
};

export interface ScriptToolsOptions {
  readonly runner: ScriptRunner;
  /** Budget of a run whose call names none. */
  readonly defaultTimeoutMs: number;
  /** Most a call may ask for. */
  readonly maxTimeoutMs: number;
  /** What this executor provides to tools' `requiredCapabilities`; none when absent. */
  readonly capabilities?: readonly string[];
  /**
   * Script runs at once on this executor; a call past it waits (its task's cancel still ends the wait).
   * Unbounded when absent. Task slots are many (a task mostly waits for its model), sandboxed processes
   * are not cheap: this keeps a burst of script calls from forking hundreds of them.
   */
  readonly maxConcurrentRuns?: number;
}

type ExternalScript = Extract<ScriptTool['handler'], { type: 'external-script' }>;
type ServiceMethod = Extract<ScriptTool['handler'], { type: 'service-method' }>;

export interface ScriptCallContext {
  readonly signal: AbortSignal;
}

export class ScriptTools {
  readonly #capabilities: ReadonlySet<string>;
  #runs = 0;
  readonly #waitingForRun: Array<() => void> = [];

  constructor(private readonly options: ScriptToolsOptions) {
    this.#capabilities = new Set(options.capabilities ?? []);
  }

  /** Script calls waiting for a run slot (SCRIPT_MAX_CONCURRENT_RUNS). */
  get waitingRuns(): number {
    return this.#waitingForRun.length;
  }

  /** The sandbox these tools run in; stdio MCP servers are started in it too. */
  get runner(): ScriptRunner {
    return this.options.runner;
  }

  /**
   * The generic call: the seed's `{success, outputData, logs}` on success (the generic tool's declared
   * output is the whole result).
   */
  async executeScript(
    toolId: string,
    input: ExecuteScriptInput,
    ctx: ScriptCallContext,
  ): Promise<ToolOutcome> {
    const language = input.language ?? LANGUAGE_BY_EXTENSION[extname(input.scriptPath).toLowerCase()];
    if (language === undefined) {
      return toolFailure(
        ErrorCode.INVALID_REQUEST,
        `cannot tell the language of "${input.scriptPath}" from its extension; give language (${ScriptLanguage.options.join(', ')})`,
      );
    }
    const result = await this.#run(
      {
        toolId,
        scriptPath: input.scriptPath,
        language,
        inputData: input.inputData ?? {},
        timeoutMs: Math.min(input.timeoutMs ?? this.options.defaultTimeoutMs, this.options.maxTimeoutMs),
      },
      ctx,
    );
    if (!result.success) return scriptFailure(result);
    return toolSuccess({ success: true, outputData: result.outputData ?? {}, ...logsOf(result) });
  }

  /**
   * A canonical SCRIPT tool. An `external-script` tool gets the model's arguments as its input and
   * answers its output; a `service-method` tool naming the generic method runs the script the model names.
   */
  runTool(
    tool: ScriptTool,
    args: Readonly<Record<string, unknown>>,
    ctx: ScriptCallContext,
  ): Promise<ToolOutcome> {
    const lacking = this.#lackingCapabilities(tool);
    if (lacking.length > 0) return Promise.resolve(capabilitiesMissing(tool, lacking));
    return tool.handler.type === 'external-script'
      ? this.#runExternalScript(tool, tool.handler, args, ctx)
      : this.#runServiceMethod(tool, tool.handler, args, ctx);
  }

  #lackingCapabilities(tool: ScriptTool): string[] {
    const required = tool.security_context?.required_capabilities ?? [];
    return [...new Set(required)].filter((capability) => !this.#capabilities.has(capability));
  }

  async #runExternalScript(
    tool: ScriptTool,
    handler: ExternalScript,
    args: Readonly<Record<string, unknown>>,
    ctx: ScriptCallContext,
  ): Promise<ToolOutcome> {
    const securityContext = toToolJson(tool).securityContext;
    const result = await this.#run(
      {
        toolId: tool.tool_id,
        scriptPath: handler.script_path,
        language: handler.language,
        ...(handler.entry_point === undefined ? {} : { entryPoint: handler.entry_point }),
        inputData: { ...args },
        // The tool file's own budget (seed 003's per-tool timeout), never above the executor's maximum.
        timeoutMs: Math.min(tool.timeout_ms ?? this.options.defaultTimeoutMs, this.options.maxTimeoutMs),
        ...(securityContext === undefined ? {} : { securityContext }),
        ...(typeof tool.output === 'object' ? { outputSchema: tool.output } : {}),
      },
      ctx,
    );
    return result.success ? toolSuccess(result.outputData ?? {}) : scriptFailure(result);
  }

  #runServiceMethod(
    tool: ScriptTool,
    handler: ServiceMethod,
    args: Readonly<Record<string, unknown>>,
    ctx: ScriptCallContext,
  ): Promise<ToolOutcome> {
    const { service_name: service, method_name: method } = handler;
    if (service !== GENERIC_SCRIPT_SERVICE.service || method !== GENERIC_SCRIPT_SERVICE.method) {
      return Promise.resolve(
        toolFailure(
          ErrorCode.NOT_FOUND,
          `${tool.name} calls the service method ${service}.${method}, which this executor does not provide`,
        ),
      );
    }
    // The tool file declares its own parameters; the generic method reads the ones it knows.
    const input = ExecuteScriptInput.strip().safeParse(args);
    if (!input.success) {
      const { message, detail } = describeZodError(input.error);
      return Promise.resolve(toolFailure(ErrorCode.INVALID_REQUEST, `invalid arguments: ${message}`, detail));
    }
    return this.executeScript(tool.tool_id, input.data, ctx);
  }

  async #run(params: ScriptExecutionParams, context: ScriptCallContext): Promise<ScriptExecutionResult> {
    if (!(await this.#takeRunSlot(context.signal))) return cancelled();
    try {
      return await this.#runNow(params, context);
    } finally {
      this.#runs -= 1;
      this.#waitingForRun.shift()?.();
    }
  }

  /** Waits for a free run slot; false when the call was aborted first (no slot taken). */
  async #takeRunSlot(signal: AbortSignal): Promise<boolean> {
    const most = this.options.maxConcurrentRuns ?? Number.POSITIVE_INFINITY;
    while (this.#runs >= most) {
      if (signal.aborted) return false;
      await new Promise<void>((resolve) => {
        const onAbort = () => {
          const index = this.#waitingForRun.indexOf(wake);
          if (index >= 0) this.#waitingForRun.splice(index, 1);
          resolve();
        };
        const wake = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        this.#waitingForRun.push(wake);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    }
    if (signal.aborted) {
      // Woken for a slot it no longer wants: pass the turn on.
      this.#waitingForRun.shift()?.();
      return false;
    }
    this.#runs += 1;
    return true;
  }

  async #runNow(
    params: ScriptExecutionParams,
    { signal }: ScriptCallContext,
  ): Promise<ScriptExecutionResult> {
    if (signal.aborted) return cancelled();
    let pid: number | undefined;
    const kill = () => {
      if (pid === undefined) return;
      try {
        // The run's first process leads its own process group (and pid namespace): take all of it.
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    signal.addEventListener('abort', kill, { once: true });
    try {
      const result = await this.options.runner.run({
        ...params,
        onSpawn: (spawned) => {
          pid = spawned;
          if (signal.aborted) kill();
        },
      });
      return signal.aborted ? cancelled() : result;
    } finally {
      signal.removeEventListener('abort', kill);
    }
  }
}

function capabilitiesMissing(tool: ScriptTool, missing: readonly string[]): ToolOutcome {
  return toolFailure(
    ErrorCode.SERVICE_UNAVAILABLE,
    `${tool.name} needs ${missing.length === 1 ? 'a capability' : 'capabilities'} this executor does not provide (${missing.join(', ')}); answer without it`,
    { tool_id: tool.tool_id, missing_capabilities: missing },
  );
}

function cancelled(): ScriptExecutionResult {
  return {
    success: false,
    error: {
      type: 'ScriptError',
      message: 'the script was cancelled',
      code: ErrorCode.CANCELLED,
      retryable: false,
    },
  };
}

/** The runner's error as a tool failure with the protocol's code; stderr and notes go in the detail. */
function scriptFailure(result: ScriptExecutionResult): ToolOutcome {
  const error = result.error;
  if (error === undefined) return toolFailure(ErrorCode.TOOL_ERROR, 'the script failed without saying why');
  const code = ErrorCodeSchema.safeParse(error.code);
  const detail = {
    type: error.type,
    ...(error.details === undefined ? {} : { details: error.details }),
    ...(error.exitCode === undefined || error.exitCode === null ? {} : { exit_code: error.exitCode }),
    ...(error.signal === undefined || error.signal === null ? {} : { signal: error.signal }),
    ...logsOf(result),
  };
  return toolFailure(
    code.success ? code.data : ErrorCode.TOOL_ERROR,
    `${error.type}: ${error.message}`,
    detail,
  );
}

function logsOf(result: ScriptExecutionResult): { logs?: string[] } {
  return result.logs === undefined || result.logs.length === 0 ? {} : { logs: result.logs };
}
