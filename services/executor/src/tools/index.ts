// The executor's one room for tools, a folder per kind: `http/` (seed 000 and OpenAPI-imported tools: the
// request builders, the guarded client with its SSRF guard, auth and the OAuth2 token cache), `openapi/`
// (requests from an OpenAPI request template), `dynamic/` (seed 004 tools through the tool box proxy),
// `native/` (tools defined in code, announced to the mesh) and `script/` (seed 003 scripts in the sandbox).
// At its root: what every kind shares (the outcome, argument validation, errors), the task's tool set
// (task-tools.ts), the runners an executor builds from its config (executor-tools.ts), and the one
// dispatcher that runs a call on the runner of its tool's kind (tool-dispatch.ts, tool-call.ts).
// This file is the room's surface for the rest of the executor.
export { toolSuccess, toolFailure } from './tool-outcome.js';
export type { ToolOutcome, ToolFailure } from './tool-outcome.js';
export { parseToolArguments, validateToolArguments } from './argument-validation.js';
export type { ArgumentCheck } from './argument-validation.js';
export { GuardedHttpClient } from './http/guarded-http-client.js';
export type { GuardedHttpClientOptions, GuardedCall } from './http/guarded-http-client.js';
export { HttpToolRunner } from './http/http-tool-runner.js';
export type { HttpToolRunnerOptions, HttpToolRunContext } from './http/http-tool-runner.js';
export type { TaskContextValues } from './http/context-params.js';
export { DynamicToolRunner } from './dynamic/dynamic-tool-runner.js';
export type { DynamicToolRunnerOptions, DynamicToolRunContext } from './dynamic/dynamic-tool-runner.js';
export type { TaskAccount } from './dynamic/dynamic-request.js';
export { OutboundGuard } from './http/outbound-guard.js';
export type { OutboundGuardOptions, ResolvedAddress } from './http/outbound-guard.js';
export { OAuth2TokenCache } from './http/oauth2-token-cache.js';
export type {
  OAuth2TokenKey,
  OAuth2TokenCacheOptions,
  OAuth2AccessToken,
} from './http/oauth2-token-cache.js';
export { SecretScrubber } from './http/secret-scrubber.js';
