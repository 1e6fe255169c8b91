// Answers of the gateway's management plane (`/v1/admin`), as its clients read them: agents and tools
// labelled with the scope they were found in, a tool write's recognised format, credential names (never
// values), API key grants, and the OpenAPI import's report. The gateway writes these shapes; the client
// SDK validates them.
import { z } from 'zod';
import { AgentDefinition } from './agent.js';
import { AgentDigest, AgentVersionNumber } from './agent-version-number.js';
import { AccountId } from './names.js';
import { ToolDefinition } from './tools/canonical.js';

/** Where a definition was found: the caller's account, or the shared catalogue behind it. */
export const RegistryScopeLabel = z.enum(['account', 'shared']);
export type RegistryScopeLabel = z.infer<typeof RegistryScopeLabel>;

const Scoped = z.object({ scope: RegistryScopeLabel });

/** An agent as `GET` answers it: the current version's definition, its version and digest, and scope. */
export const ScopedAgent = AgentDefinition.extend({
  ...Scoped.shape,
  version: AgentVersionNumber.optional(),
  digest: AgentDigest.optional(),
});
export type ScopedAgent = z.infer<typeof ScopedAgent>;
export const AgentList = z.object({ agents: z.array(ScopedAgent) });

export const ScopedTool = z.intersection(ToolDefinition, Scoped);
export type ScopedTool = z.infer<typeof ScopedTool>;
export const ToolList = z.object({ tools: z.array(ScopedTool) });

/** `POST /tools`, `PUT /tools/:name`: the format the body was recognised as, and the tool as stored. */
export const ToolWriteReply = z.object({ format: z.string().min(1), tool: ToolDefinition });
export type ToolWriteReply = z.infer<typeof ToolWriteReply>;

/** `GET .../credentials`: names only. */
export const CredentialNameList = z.object({ names: z.array(z.string()) });

/**
 * `GET /accounts` (an admin key naming no account): the accounts the mesh knows of — from the gateway's
 * configured API keys, the accounts' own agents and tools, and stored credentials — that an admin may act
 * for with `x-account-id`. Not every account: one known only from a key registered in KV is not listed.
 */
export const AccountList = z.object({ accounts: z.array(AccountId) });
export type AccountList = z.infer<typeof AccountList>;

/** `POST /api-keys`: the grant as stored; `api_key` only when the gateway generated it (shown this once). */
export const ApiKeyRegistrationReply = z.object({
  account_id: AccountId,
  account_type: z.string().min(1),
  label: z.string().optional(),
  api_key: z.string().min(1).optional(),
});
export type ApiKeyRegistrationReply = z.infer<typeof ApiKeyRegistrationReply>;

/** `POST /tools/import`: what an OpenAPI document became. */
export const ToolImportReply = z.object({
  dry_run: z.boolean(),
  imported: z.array(
    z.object({
      name: z.string(),
      method: z.string(),
      path: z.string(),
      operation: z.string(),
      existed: z.boolean(),
    }),
  ),
  skipped: z.array(z.object({ operation: z.string(), reason: z.string() })),
  credentials: z.array(z.string()),
  warnings: z.array(z.object({ operation: z.string(), message: z.string() })),
  /** On a dry run: the canonical definitions that would be stored. */
  plugins: z.array(ToolDefinition).optional(),
});
export type ToolImportReply = z.infer<typeof ToolImportReply>;
