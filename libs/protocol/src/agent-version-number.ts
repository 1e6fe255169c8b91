// The two things that name an agent version, kept apart from agent-version.ts so task.ts can use them
// without importing the agent definition (which imports task.ts).
import { z } from 'zod';

/** A version number: 1 for an agent's first write, then one more for each write. */
export const AgentVersionNumber = z.int().min(1).max(999_999_999);
export type AgentVersionNumber = z.infer<typeof AgentVersionNumber>;

/** `sha256:<64 hex>` of the canonical JSON of the definition as stored (`canonicalJson`). */
export const AgentDigest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'digest must be sha256:<64 hex>');
export type AgentDigest = z.infer<typeof AgentDigest>;

/**
 * The digests of the tools an assembled task runs, by bound name (`sha256:` of each tool's canonical JSON,
 * as a version's `tool_digests` records them): what an unpinned task ran, beside its version.
 */
export const RunToolDigests = z.record(z.string().min(1).max(128), AgentDigest);
export type RunToolDigests = z.infer<typeof RunToolDigests>;
