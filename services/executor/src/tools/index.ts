// The executor's tool runners as the loop sees them: the outcome every runner returns, argument parsing and
// validation, the HTTP runner (seed 000 and OpenAPI-imported tools) and the seed 004 dynamic tool runner,
// both sending through one guarded client (SSRF guard, time budget, bounded answers), and the shared OAuth2
// token cache.
export { toolSuccess, toolFailure } from './tool-outcome.js';
export type { ToolOutcome, ToolFailure } from './tool-outcome.js';
export { parseToolArguments, validateToolArguments } from './argument-validation.js';
export type { ArgumentCheck } from './argument-validation.js';
export { GuardedHttpClient } from './guarded-http-client.js';
export type { GuardedHttpClientOptions, GuardedCall } from './guarded-http-client.js';
export { HttpToolRunner } from './http-tool-runner.js';
export type { HttpToolRunnerOptions, HttpToolRunContext } from './http-tool-runner.js';
export type { TaskContextValues } from './context-params.js';
export { DynamicToolRunner } from './dynamic-tool-runner.js';
export type { DynamicToolRunnerOptions, DynamicToolRunContext } from './dynamic-tool-runner.js';
export type { TaskAccount } from './dynamic-request.js';
export { OutboundGuard } from './outbound-guard.js';
export type { OutboundGuardOptions, ResolvedAddress } from './outbound-guard.js';
export { OAuth2TokenCache } from './oauth2-token-cache.js';
export type { OAuth2TokenKey, OAuth2TokenCacheOptions, OAuth2AccessToken } from './oauth2-token-cache.js';
export { SecretScrubber } from './secret-scrubber.js';
