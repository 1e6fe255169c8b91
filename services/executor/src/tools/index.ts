// The executor's tool runners as the loop sees them: the outcome every runner returns, argument parsing and
// validation, and the seed 000 HTTP runner with its SSRF guard and shared OAuth2 token cache.
export { toolSuccess, toolFailure } from './tool-outcome.js';
export type { ToolOutcome, ToolFailure } from './tool-outcome.js';
export { parseToolArguments, validateToolArguments } from './argument-validation.js';
export type { ArgumentCheck } from './argument-validation.js';
export { HttpToolRunner } from './http-tool-runner.js';
export type { HttpToolRunnerOptions, HttpToolRunContext } from './http-tool-runner.js';
export { OutboundGuard } from './outbound-guard.js';
export type { OutboundGuardOptions, ResolvedAddress } from './outbound-guard.js';
export { OAuth2TokenCache } from './oauth2-token-cache.js';
export type { OAuth2TokenCacheOptions, OAuth2TokenKey, OAuth2AccessToken } from './oauth2-token-cache.js';
export { SecretScrubber } from './secret-scrubber.js';
