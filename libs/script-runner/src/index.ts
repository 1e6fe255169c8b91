export { ScriptRunner } from './script-runner.js';
export { CompiledSchemas } from './compiled-schemas.js';
export type {
  RunnerCapabilities,
  ScriptExecutionError,
  ScriptExecutionParams,
  ScriptExecutionResult,
  ScriptSession,
  ScriptSessionExit,
  ScriptSessionParams,
} from './script-runner.js';
export {
  DependencyError,
  InputError,
  ScriptError,
  ScriptErrorType,
  ScriptRunnerError,
  SecurityError,
  TimeoutError,
} from './errors.js';
export type { ExitStatus } from './errors.js';
export { refusedEnvironmentVariable } from './environment.js';
export { POLICY_DEFAULTS } from './policy.js';
export type {
  LanguageCommand,
  LanguageCommands,
  NodeLanguageCommand,
  ResourceLimits,
  SandboxUser,
  ScriptRunnerPolicy,
} from './policy.js';
