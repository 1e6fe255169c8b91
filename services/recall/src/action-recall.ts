/**
 * Seed 004 §2.2/§4 and phase 3, the recall itself, per identity: action query (cached per account, network,
 * action type and identity) → the action type's `condition` (action-condition.ts) → action source check →
 * tool detail and its conversion (cached per box, tool and conversion options) → `_dynamic_tools` by the
 * deployment's conversion rules; an `mcp` action source answers MCP dynamic tools instead (mcp-actions.ts). Expected failures are thrown as the seed's coded errors (recall-errors.ts).
 */
import type { ConversionOptions } from '@agentmesh/openapi';
import {
  ActionRecallResponse,
  ActionSourceType,
  recallIdentities,
  type Action,
  type ActionQueryResponse,
  type IdentityFailure,
  type RecalledTool,
  type RecallRequest,
  type UniqueIdentity,
} from '@agentmesh/protocol';
import { compileCondition, ConditionSyntaxError, type ConditionPredicate } from './action-condition.js';
import { apiUrlFor } from './api-url.js';
import { CacheSource, type LayeredCache } from './cache/layered-cache.js';
import { conversionOptions, type ConversionRules } from './conversion-rules.js';
import { convertTool, type ConvertedTool } from './converted-tool.js';
import { dynamicToolsFor } from './dynamic-tools.js';
import { mcpDynamicToolsFor, mcpTargetOf } from './mcp-actions.js';
import {
  EveryIdentityFailedError,
  InvalidRecallRequestError,
  RecallError,
  UnreadableConditionError,
  UnsupportedActionTypeError,
  UpstreamFailure,
  UpstreamUnavailableError,
} from './recall-errors.js';
import { stableJson } from './stable-json.js';
import type { Account } from './upstream/account-headers.js';
import { isDotSegmentId } from './upstream/path-segment.js';
import {
  actionQueryPath,
  ONTOLOGY_QUERY,
  type ActionQuery,
  type OntologyQuery,
} from './upstream/ontology-query.js';
import type { ToolBox, ToolRef } from './upstream/tool-box.js';

export interface ActionRecallDependencies {
  ontology: OntologyQuery;
  toolBox: ToolBox;
  /** The deployment's conversion rules, with the api_url template in force. */
  rules: ConversionRules & { api_url: string };
  /** Most identities a plural request may name (each is an action query). */
  maxIdentities: number;
  /** Absent when caching is off. */
  actionCache?: LayeredCache<ActionQueryResponse> | undefined;
  toolCache?: LayeredCache<ConvertedTool> | undefined;
}

/** Where the answer's parts came from; `undefined` when that part was not needed. */
export interface RecallSources {
  actions: CacheSource;
  tool: CacheSource | undefined;
}

export interface RecallOutcome {
  response: ActionRecallResponse;
  sources: RecallSources;
}

interface IdentityRecall {
  tools: RecalledTool[];
  sources: RecallSources;
}

/** Identities of one plural request recalled at once, at most. */
const IDENTITY_CONCURRENCY = 8;

export class ActionRecall {
  readonly #conversionOptions: ConversionOptions;

  constructor(private readonly deps: ActionRecallDependencies) {
    this.#conversionOptions = conversionOptions(deps.rules);
  }

  /**
   * Singular (`unique_identity`): that object's tool, or the seed's error. Plural (`unique_identities`): each
   * identity recalled on its own (its own action query, condition and tool), the union of their tools
   * (one per name) and, under `failures`, the error of each identity that failed; only when every identity
   * failed is the answer an error.
   */
  async recall(request: RecallRequest): Promise<RecallOutcome> {
    const account: Account = { id: request.account_id, type: request.account_type };
    if (request.unique_identities === undefined) {
      const [identity] = recallIdentities(request);
      if (identity === undefined) throw new Error('a recall request without an identity passed validation');
      const { tools, sources } = await this.#recallOne(request, identity, account, false);
      return { response: ActionRecallResponse.parse({ _dynamic_tools: tools }), sources };
    }

    const identities = request.unique_identities;
    if (identities.length > this.deps.maxIdentities) {
      const message = `at most ${this.deps.maxIdentities} identities per request (each is its own action query)`;
      throw new InvalidRecallRequestError(`unique_identities: ${message}`, {
        issues: [{ path: 'unique_identities', message }],
      });
    }
    const settled = await mapConcurrently(identities, IDENTITY_CONCURRENCY, (identity) =>
      this.#recallOne(request, identity, account, true).then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    );
    const tools = new Map<string, RecalledTool>();
    const failures: IdentityFailure[] = [];
    let sources: RecallSources | undefined;
    settled.forEach((outcome, index) => {
      const identity = identities[index] as UniqueIdentity;
      if (!outcome.ok) {
        // A bug of ours is not an identity's failure: it fails the request as such.
        if (!(outcome.error instanceof RecallError)) throw outcome.error;
        failures.push({ index, unique_identity: identity, ...outcome.error.toBody() });
        return;
      }
      sources ??= outcome.value.sources;
      for (const tool of outcome.value.tools) if (!tools.has(tool.name)) tools.set(tool.name, tool);
    });
    if (sources === undefined) throw new EveryIdentityFailedError(failures);
    // A failure here is a bug of ours (the parts were validated on the way in), so it throws as such.
    const response = ActionRecallResponse.parse({
      _dynamic_tools: [...tools.values()],
      ...(failures.length === 0 ? {} : { failures }),
    });
    return { response, sources };
  }

  async #recallOne(
    request: RecallRequest,
    identity: UniqueIdentity,
    account: Account,
    plural: boolean,
  ): Promise<IdentityRecall> {
    const query: ActionQuery = { knId: request.kn_id, atId: request.at_id, identities: [identity], account };
    const answer = await this.#actions(query);
    const actions = offeredActions(answer.value, identity, account, request.at_id);
    if (actions.length === 0) return { tools: [], sources: { actions: answer.source, tool: undefined } };
    const source = answer.value.action_source;
    if (source?.type === ActionSourceType.MCP) {
      // No tool detail to fetch: the executor lists the server's tools itself.
      const tools = mcpDynamicToolsFor(mcpTargetOf(source), actions, plural, answer.value.action_type?.name);
      return { tools, sources: { actions: answer.source, tool: undefined } };
    }
    const ref = toolOf(answer.value, query);
    const tool = await this.#tool(ref, account);
    const tools = dynamicToolsFor(
      tool.value,
      actions,
      apiUrlFor(this.deps.rules.api_url, ref),
      plural,
      this.deps.rules,
      {
        knId: request.kn_id,
        atId: request.at_id,
        boxId: ref.boxId,
        toolId: ref.toolId,
        ...(answer.value.action_type?.name === undefined
          ? {}
          : { actionTypeName: answer.value.action_type.name }),
      },
    );
    return { tools, sources: { actions: answer.source, tool: tool.source } };
  }

  #actions(query: ActionQuery): Promise<{ value: ActionQueryResponse; source: CacheSource }> {
    const load = () => this.deps.ontology.queryActions(query);
    const cache = this.deps.actionCache;
    if (cache === undefined) return load().then((value) => ({ value, source: CacheSource.UPSTREAM }));
    const key = stableJson([query.account.id, query.account.type, query.knId, query.atId, query.identities]);
    return cache.getOrLoad(key, load);
  }

  #tool(ref: ToolRef, account: Account): Promise<{ value: ConvertedTool; source: CacheSource }> {
    // The detail is fetched with the account of the first caller and then shared: the action query (which
    // is per account) has already decided that this account's object offers this tool.
    const options = this.#conversionOptions;
    const load = async () => convertTool(await this.deps.toolBox.toolDetail(ref, account), ref, options);
    const cache = this.deps.toolCache;
    if (cache === undefined) return load().then((value) => ({ value, source: CacheSource.UPSTREAM }));
    // Another deployment's schema rules convert the same tool differently: they are part of the key.
    const key =
      Object.keys(options).length === 0 ? [ref.boxId, ref.toolId] : [ref.boxId, ref.toolId, options];
    return cache.getOrLoad(stableJson(key), load);
  }
}

/**
 * The actions offered: all of them, or, when the action type carries a `condition`, those for which it holds
 * on what recall knows of the object — its identity, then the action's parameters (which ontology-query
 * instantiated from the object), then the account (`account_id`, `account_type`).
 */
function offeredActions(
  answer: ActionQueryResponse,
  identity: UniqueIdentity,
  account: Account,
  atId: string,
): Action[] {
  const condition = answer.action_type?.condition;
  if (condition === undefined || condition === null || answer.actions.length === 0) return answer.actions;
  let holds: ConditionPredicate;
  try {
    holds = compileCondition(condition);
  } catch (error) {
    if (!(error instanceof ConditionSyntaxError)) throw error;
    throw new UnreadableConditionError(answer.action_type?.id ?? atId, error.path, error.problem, {
      cause: error,
    });
  }
  return answer.actions.filter((action) =>
    holds({ account_id: account.id, account_type: account.type, ...action.parameters, ...identity }),
  );
}

async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await run(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** The tool that executes the actions, or the seed's error when the source is not a tool. */
function toolOf(answer: ActionQueryResponse, query: ActionQuery): ToolRef {
  const source = answer.action_source;
  if (source !== undefined && source.type !== ActionSourceType.TOOL)
    throw new UnsupportedActionTypeError(source);
  const unexpected = (message: string) =>
    new UpstreamUnavailableError(`${ONTOLOGY_QUERY}: ${message}`, {
      upstream: ONTOLOGY_QUERY,
      request: `POST ${actionQueryPath(query.knId, query.atId)}`,
      reason: UpstreamFailure.UNEXPECTED_SHAPE,
      body_excerpt: JSON.stringify({ action_source: source ?? null }).slice(0, 512),
    });
  if (source?.box_id === undefined || source.tool_id === undefined) {
    throw unexpected('actions came without a tool action_source (type, box_id and tool_id expected)');
  }
  // The ids go into the tool box's paths and the tool's api_url, where "." or ".." would climb out of them.
  if (isDotSegmentId(source.box_id) || isDotSegmentId(source.tool_id)) {
    throw unexpected('the action_source names its box_id or tool_id "." or ".."');
  }
  return { boxId: source.box_id, toolId: source.tool_id };
}
