// Agent versions: every write of an agent is a new immutable version (a number, counting from 1 per agent,
// and a content digest); the agent's name points at its current version. A task may pin one with
// `workflow_id@version`; without a pin it runs the version current when it is assembled. These are the
// shapes of that: the pin as callers write it, a stored version, and the management plane's answers.
import { z } from 'zod';
import { AgentDefinition } from './agent.js';
import { AgentDigest, AgentVersionNumber } from './agent-version-number.js';
import { IsoDateTime, WorkflowId } from './ids.js';

/** A version as it is written in a path or a pin: decimal, no sign, no leading zero. */
const VERSION_TEXT = /^[1-9][0-9]{0,8}$/;

/** Parses a version given as text (a path segment, a CLI argument); undefined when it is not one. */
export function parseAgentVersion(text: string): AgentVersionNumber | undefined {
  return VERSION_TEXT.test(text) ? Number(text) : undefined;
}

/** A workflow id and the version it is pinned to, if any. */
export interface WorkflowPin {
  workflow_id: WorkflowId;
  version?: AgentVersionNumber;
}

/**
 * `workflow_id` or `workflow_id@version` as a submission names its agent (HTTP, NATS, the OpenAI façade's
 * `model`, MCP, the console). Parsed into the id and the pin; a malformed pin is refused, never read as an
 * id (an `@` is not legal in a workflow id).
 */
export const WorkflowRef = z.string().transform((text, ctx): WorkflowPin => {
  const at = text.lastIndexOf('@');
  const id = at < 0 ? text : text.slice(0, at);
  const parsedId = WorkflowId.safeParse(id);
  if (!parsedId.success) {
    for (const issue of parsedId.error.issues) ctx.addIssue({ code: 'custom', message: issue.message });
    return z.NEVER;
  }
  if (at < 0) return { workflow_id: parsedId.data };
  const version = parseAgentVersion(text.slice(at + 1));
  if (version === undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text.slice(at + 1)}" is not a version: pin an agent as workflow_id@<version>, a number from 1`,
    });
    return z.NEVER;
  }
  return { workflow_id: parsedId.data, version };
});

const REF_PATTERN = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*(?:@[1-9][0-9]{0,8})?$/;

/** The same as text (a body field stays a string): checked like WorkflowRef, read with parseWorkflowRef. */
export const WorkflowRefText = z
  .string()
  .max(140, 'workflow_id must be at most 128 characters, plus @version')
  .regex(
    REF_PATTERN,
    'workflow_id must be a workflow id (A-Z, a-z, 0-9, "_" or "-", optionally dot-separated), or workflow_id@<version> (a number from 1)',
  )
  .superRefine((text, ctx) => {
    // The pattern reported a malformed reference already; what it cannot say is the id's length.
    const parsed = WorkflowRef.safeParse(text);
    if (REF_PATTERN.test(text) && !parsed.success) {
      for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', message: issue.message });
    }
  });

/** `workflow_id` or `workflow_id@version`; throws (a ZodError) when it is neither. */
export function parseWorkflowRef(text: string): WorkflowPin {
  return WorkflowRef.parse(text);
}

/** The text of a pin: `workflow_id@version`, or the bare id without one. */
export function formatWorkflowRef(pin: WorkflowPin): string {
  return pin.version === undefined ? pin.workflow_id : `${pin.workflow_id}@${pin.version}`;
}

/**
 * Which version of an agent a record describes. Stored beside the definition in KV `mesh_agents` (the
 * name's entry and each version's own entry), returned by the agent's `GET`, and carried by a task that ran
 * it (`task_meta`, its status, its first event, its spans).
 */
export const AgentVersionStamp = z.object({
  version: AgentVersionNumber,
  digest: AgentDigest,
});
export type AgentVersionStamp = z.infer<typeof AgentVersionStamp>;

/**
 * The digests of the tools an agent bound when the version was written, by tool name, as resolved for
 * the writer's scope (`sha256:` of each tool's canonical JSON); null for a name no tool answered then.
 */
export const BoundToolDigests = z.record(z.string(), AgentDigest.nullable());
export type BoundToolDigests = z.infer<typeof BoundToolDigests>;

/** An agent definition with its version: what `mesh_agents` holds under the name and under each version. */
export const VersionedAgent = AgentDefinition.extend({
  ...AgentVersionStamp.shape,
  /** When this version was written. */
  created_at: IsoDateTime.optional(),
  tool_digests: BoundToolDigests.optional(),
});
export type VersionedAgent = z.infer<typeof VersionedAgent>;

/** One line of `GET /agents/:id/versions`. */
export const AgentVersionSummary = z.object({
  version: AgentVersionNumber,
  digest: AgentDigest,
  created_at: IsoDateTime.optional(),
  /** The version the name points at. */
  current: z.boolean(),
});
export type AgentVersionSummary = z.infer<typeof AgentVersionSummary>;

/** `GET /agents/:id/versions`: the versions kept, newest first. */
export const AgentVersionList = z.object({
  workflow_id: WorkflowId,
  current: AgentVersionNumber,
  versions: z.array(AgentVersionSummary),
});
export type AgentVersionList = z.infer<typeof AgentVersionList>;

/**
 * One difference between two definitions, at a JSON path (RFC 6901 pointer, `""` for the whole):
 * `added` (only in `to`), `removed` (only in `from`) or `changed` (both, different). Arrays compare as
 * whole values (a bound tool list changed is one `changed`), objects member by member.
 */
export const AgentDiffEntry = z.object({
  path: z.string(),
  op: z.enum(['added', 'removed', 'changed']),
  from: z.unknown().optional(),
  to: z.unknown().optional(),
});
export type AgentDiffEntry = z.infer<typeof AgentDiffEntry>;

/** `GET /agents/:id/diff?from=a&to=b`. */
export const AgentDiff = z.object({
  workflow_id: WorkflowId,
  from: AgentVersionStamp,
  to: AgentVersionStamp,
  changes: z.array(AgentDiffEntry),
});
export type AgentDiff = z.infer<typeof AgentDiff>;

/** `POST /agents/:id/rollback` body: the version the name points at from now on. */
export const AgentRollbackRequest = z.strictObject({ version: AgentVersionNumber });
export type AgentRollbackRequest = z.infer<typeof AgentRollbackRequest>;

/** The differences between two JSON values, in the format of {@link AgentDiffEntry}, sorted by path. */
export function diffJson(from: unknown, to: unknown): AgentDiffEntry[] {
  const changes: AgentDiffEntry[] = [];
  walk(from, to, '', changes);
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

function walk(from: unknown, to: unknown, path: string, out: AgentDiffEntry[]): void {
  if (isPlainObject(from) && isPlainObject(to)) {
    const keys = new Set([...Object.keys(from), ...Object.keys(to)]);
    for (const key of keys) {
      const child = `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
      if (!(key in from) || from[key] === undefined) {
        if (to[key] !== undefined) out.push({ path: child, op: 'added', to: to[key] });
      } else if (!(key in to) || to[key] === undefined) {
        out.push({ path: child, op: 'removed', from: from[key] });
      } else {
        walk(from[key], to[key], child, out);
      }
    }
    return;
  }
  if (JSON.stringify(from) !== JSON.stringify(to)) out.push({ path, op: 'changed', from, to });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
