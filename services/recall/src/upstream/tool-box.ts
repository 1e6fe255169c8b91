/**
 * agent-operator-integration's tool detail (seed 004 §2.1): a tool's name, description and OpenAPI
 * operation (`api_spec`). A GET, so transient failures are retried.
 */
import { ToolDetailResponse } from '@agentmesh/protocol';
import { z } from 'zod';
import { UpstreamFailure, UpstreamUnavailableError } from '../recall-errors.js';
import { accountHeaders, type Account } from './account-headers.js';
import { pathSegment } from './path-segment.js';
import type { UpstreamClient } from './upstream-client.js';

export const OPERATOR_INTEGRATION = 'agent-operator-integration';

/**
 * The protocol's tool detail, except that `api_spec` is only required to be present: whether it can be
 * converted is the converter's call (which also reads Swagger-style operations the protocol schema does not
 * describe), and a spec it cannot read is SCHEMA_CONVERSION_ERROR, not a broken upstream.
 */
export const ToolDetail = ToolDetailResponse.extend({
  api_spec: z.unknown().refine((value) => value !== undefined && value !== null, 'api_spec is required'),
});
export type ToolDetail = z.infer<typeof ToolDetail>;

export interface ToolRef {
  boxId: string;
  toolId: string;
}

export class ToolBox {
  constructor(private readonly client: UpstreamClient) {}

  /** GET `/api/agent-operator-integration/internal-v1/tool-box/{box_id}/tool/{tool_id}`. */
  async toolDetail(tool: ToolRef, account: Account): Promise<ToolDetail> {
    const path =
      `/api/agent-operator-integration/internal-v1/tool-box/${pathSegment(tool.boxId)}` +
      `/tool/${pathSegment(tool.toolId)}`;
    const answer = await this.client.requestJson({
      method: 'GET',
      path,
      headers: accountHeaders(account),
      idempotent: true,
    });
    const parsed = ToolDetail.safeParse(answer);
    if (!parsed.success) {
      throw new UpstreamUnavailableError(
        `${OPERATOR_INTEGRATION}: the tool detail answer is not a tool (name and api_spec expected)`,
        {
          upstream: OPERATOR_INTEGRATION,
          request: `GET ${path}`,
          reason: UpstreamFailure.UNEXPECTED_SHAPE,
          body_excerpt: JSON.stringify(answer).slice(0, 512),
        },
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }
}
