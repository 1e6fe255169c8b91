// Runs seed 004 dynamic tools (found by action recall): the model's arguments and the tool's `fixed_params`
// become one POST to the tool box proxy at `api_url` (see dynamic-request.ts), sent through the same guarded
// client as HTTP plugins: outbound guard, time budget, bounded answers, coded failures.
//
// Arguments are not validated here: the loop calls `validateToolArguments` first.
import { convertApiSpec, OpenApiError, type RequestTemplate } from '@agentmesh/openapi';
import type { DynamicToolDefinition } from '@agentmesh/protocol';
import { buildDynamicRequest, type TaskAccount } from './dynamic-request.js';
import { GuardedHttpClient, type GuardedHttpClientOptions } from '../http/guarded-http-client.js';
import { SecretScrubber } from '../http/secret-scrubber.js';
import type { ToolOutcome } from '../tool-outcome.js';

/** Either the client's options (the runner owns the client) or a client shared with another runner. */
export type DynamicToolRunnerOptions = GuardedHttpClientOptions | { readonly client: GuardedHttpClient };

export interface DynamicToolRunContext {
  readonly account: TaskAccount;
  readonly signal?: AbortSignal;
}

export class DynamicToolRunner {
  readonly #client: GuardedHttpClient;
  readonly #ownsClient: boolean;
  /** `original_schema` conversions by tool object; `null` when it does not convert (naming fallback). */
  readonly #templates = new WeakMap<DynamicToolDefinition, RequestTemplate | null>();

  constructor(options: DynamicToolRunnerOptions) {
    this.#ownsClient = !('client' in options);
    this.#client = 'client' in options ? options.client : new GuardedHttpClient(options);
  }

  run(
    tool: DynamicToolDefinition,
    args: Readonly<Record<string, unknown>>,
    ctx: DynamicToolRunContext,
  ): Promise<ToolOutcome> {
    // No vault: a dynamic tool carries no credentials of the task, so there is nothing secret to scrub.
    const scrubber = new SecretScrubber();
    return this.#client.call({ toolName: tool.name, signal: ctx.signal, scrubber }, async (signal) => {
      const plan = buildDynamicRequest(tool, this.#templateOf(tool), args, ctx.account);
      return this.#client.exchange(plan, signal, scrubber);
    });
  }

  /** Closes the runner's own client (not a shared one). */
  async close(): Promise<void> {
    if (this.#ownsClient) await this.#client.close();
  }

  #templateOf(tool: DynamicToolDefinition): RequestTemplate | undefined {
    let template = this.#templates.get(tool);
    if (template === undefined) {
      template = convertedSchema(tool.original_schema);
      this.#templates.set(tool, template);
    }
    return template ?? undefined;
  }
}

/**
 * The conversion of `original_schema`, or null when it cannot be read: the converter refuses it, or its
 * parameter list is not a list (the test seed 004 §4.3 and `mapParametersBySchema` use for "unparseable").
 */
function convertedSchema(originalSchema: Readonly<Record<string, unknown>>): RequestTemplate | null {
  const { parameters } = originalSchema;
  if (parameters !== undefined && !Array.isArray(parameters)) return null;
  try {
    return convertApiSpec(originalSchema);
  } catch (error) {
    if (error instanceof OpenApiError) return null;
    throw error;
  }
}
