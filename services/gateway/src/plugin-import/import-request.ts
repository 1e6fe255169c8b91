/**
 * The body of `POST /v1/admin/plugins/import`: an OpenAPI 3.0/3.1 or Swagger 2.0 document (a JSON object,
 * or JSON/YAML text) and how to import it — which operations, which server, how to prefix the names of
 * the plugins and of the credentials they need, and whether to store anything at all.
 */
import { HttpUrl } from '@agentmesh/protocol';
import { z } from 'zod';

/** Prefixes are kept as given, so they may only hold characters legal in a function name. */
const NamePrefix = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,32}$/, 'must be 1-32 characters of A-Z, a-z, 0-9, "_" or "-"');

export const PluginImportRequest = z.strictObject({
  document: z.union(
    [z.string().min(1, 'must not be empty'), z.record(z.string(), z.unknown())],
    'must be an OpenAPI document: a JSON object, or JSON or YAML text',
  ),
  /** operationIds or `METHOD /path` (e.g. `GET /pet/{petId}`); all operations when absent. */
  operations: z.array(z.string().min(1)).min(1).max(10_000).optional(),
  /** Replaces the document's servers (used as given: include any base path). */
  base_url: HttpUrl.refine((url) => !url.includes('?') && !url.includes('#'), {
    message: 'must be a base URL without query or fragment',
  }).optional(),
  name_prefix: NamePrefix.optional(),
  /** Prepended to the credential names proposed for the document's security schemes. */
  credential_prefix: NamePrefix.optional(),
  dry_run: z.boolean().optional(),
});
export type PluginImportRequest = z.infer<typeof PluginImportRequest>;
