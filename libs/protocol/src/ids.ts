// Identifiers other than trace and account ids: which agent/workflow runs, for which user, and the client's
// idempotency key. Upstream forms are lenient where RuoYi is (numeric user ids); bus forms are plain strings.
import { z } from 'zod';

const WORKFLOW_ID_PATTERN = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

/** Agent/workflow id (seed 001 `workflow_id`, e.g. `agent_chat`); also its key in KV `mesh_agents`. */
export const WorkflowId = z
  .string()
  .max(128, 'workflow_id must be at most 128 characters')
  .regex(WORKFLOW_ID_PATTERN, 'workflow_id must be A-Z, a-z, 0-9, "_" or "-", optionally dot-separated');
export type WorkflowId = z.infer<typeof WorkflowId>;

export const UserId = z.string().min(1).max(256);
export type UserId = z.infer<typeof UserId>;

/** RuoYi's user ids are BIGINT and may arrive as JSON numbers; they travel on as strings. */
export const UserIdInput = z.union([UserId, z.int().nonnegative().transform(String)]);

export const IdempotencyKey = z.string().min(1).max(256);
export type IdempotencyKey = z.infer<typeof IdempotencyKey>;

/** An ISO 8601 date-time with `Z` or an offset. */
export const IsoDateTime = z.iso.datetime({ offset: true });
