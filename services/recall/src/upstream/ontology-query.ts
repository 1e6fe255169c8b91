/**
 * ontology-query's action query (seed 004 §2.1): the actions executable on some objects, and the source
 * (tool box tool) that executes them. A POST that reads: see {@link OntologyQuery.queryActions} on retries.
 */
import { ActionQueryResponse, type UniqueIdentity } from '@agentmesh/protocol';
import { UpstreamFailure, UpstreamUnavailableError } from '../recall-errors.js';
import { accountHeaders, type Account } from './account-headers.js';
import { pathSegment } from './path-segment.js';
import type { UpstreamClient } from './upstream-client.js';

export const ONTOLOGY_QUERY = 'ontology-query';

export interface ActionQuery {
  knId: string;
  atId: string;
  identities: UniqueIdentity[];
  account: Account;
}

/** `/api/ontology-query/v1/knowledge-networks/{kn_id}/action-types/{at_id}`, ids percent-encoded (never dot segments). */
export function actionQueryPath(knId: string, atId: string): string {
  return (
    `/api/ontology-query/v1/knowledge-networks/${pathSegment(knId)}` + `/action-types/${pathSegment(atId)}`
  );
}

export class OntologyQuery {
  constructor(private readonly client: UpstreamClient) {}

  /**
   * POST `/api/ontology-query/v1/knowledge-networks/{kn_id}/action-types/{at_id}` with
   * `{"unique_identities": [...]}`. Not retried: the upstream declares it a POST, and nothing in its
   * contract promises that sending it twice is harmless; the caller sees SERVICE_UNAVAILABLE (retryable)
   * and decides.
   */
  async queryActions(query: ActionQuery): Promise<ActionQueryResponse> {
    const path = actionQueryPath(query.knId, query.atId);
    const answer = await this.client.requestJson({
      method: 'POST',
      path,
      headers: accountHeaders(query.account),
      body: { unique_identities: query.identities },
      idempotent: false,
    });
    const parsed = ActionQueryResponse.safeParse(answer);
    if (!parsed.success) {
      throw new UpstreamUnavailableError(
        `${ONTOLOGY_QUERY}: the action query answer is not an action list`,
        {
          upstream: ONTOLOGY_QUERY,
          request: `POST ${path}`,
          reason: UpstreamFailure.UNEXPECTED_SHAPE,
          body_excerpt: JSON.stringify(answer).slice(0, 512),
        },
        { cause: parsed.error },
      );
    }
    return parsed.data;
  }
}
