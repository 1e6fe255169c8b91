/**
 * Seed 004 §2.2/§4, the recall itself: action query (cached per account, network, action type and
 * identities) → action source check → tool detail and its conversion (cached per box and tool) →
 * `_dynamic_tools`. Expected failures are thrown as the seed's coded errors (recall-errors.ts).
 */
import {
  ActionRecallResponse,
  ActionSourceType,
  recallIdentities,
  type ActionQueryResponse,
  type RecallRequest,
} from '@agentmesh/protocol';
import { apiUrlFor } from './api-url.js';
import { CacheSource, type LayeredCache } from './cache/layered-cache.js';
import { convertTool, type ConvertedTool } from './converted-tool.js';
import { dynamicToolsFor } from './dynamic-tools.js';
import { UnsupportedActionTypeError, UpstreamFailure, UpstreamUnavailableError } from './recall-errors.js';
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
  apiUrlTemplate: string;
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

export class ActionRecall {
  constructor(private readonly deps: ActionRecallDependencies) {}

  async recall(request: RecallRequest): Promise<RecallOutcome> {
    const account: Account = { id: request.account_id, type: request.account_type };
    const query: ActionQuery = {
      knId: request.kn_id,
      atId: request.at_id,
      identities: recallIdentities(request),
      account,
    };
    const answer = await this.#actions(query);
    if (answer.value.actions.length === 0) {
      return { response: { _dynamic_tools: [] }, sources: { actions: answer.source, tool: undefined } };
    }
    const ref = toolOf(answer.value, query);
    const tool = await this.#tool(ref, account);
    const tools = dynamicToolsFor(
      tool.value,
      answer.value.actions,
      apiUrlFor(this.deps.apiUrlTemplate, ref),
      request.unique_identities !== undefined,
    );
    // A failure here is a bug of ours (the parts were validated on the way in), so it throws as such.
    const response = ActionRecallResponse.parse({ _dynamic_tools: tools });
    return { response, sources: { actions: answer.source, tool: tool.source } };
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
    const load = async () => convertTool(await this.deps.toolBox.toolDetail(ref, account), ref);
    const cache = this.deps.toolCache;
    if (cache === undefined) return load().then((value) => ({ value, source: CacheSource.UPSTREAM }));
    return cache.getOrLoad(stableJson([ref.boxId, ref.toolId]), load);
  }
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
