export { baseConfigSchema, ConfigError, loadConfig } from './config.js';
export type { BaseConfig } from './config.js';
export { keyIdSchema, masterKeyListSchema, masterKeySchema, vaultPublicKeySchema } from './key-config.js';
export { createLogger } from './logger.js';
export { runCommand } from './command.js';
export type { CommandContext, CommandDefinition } from './command.js';
export { isSecretKey, REDACTED, redactSecrets, SECRET_KEYS } from './redaction.js';
export type { Logger, LoggerOptions } from './logger.js';
export { connectNats, defaultInboxPrefix, natsConnectionOptions } from './nats-connection.js';
export type { NatsConnectionOptions, NatsSettings } from './nats-connection.js';
export { logWaitingForResource } from './resource-wait.js';
export type { WaitedResource } from './resource-wait.js';
export { addSecretFilter, filterSecrets } from './secret-filter.js';
export type { SecretFilter } from './secret-filter.js';
export { runService } from './service.js';
export { isTransientNatsError, retryStartup, StartupTimeoutError } from './startup-retry.js';
export type { StartupRetryOptions, StartupWait } from './startup-retry.js';
export type { RunningService, ServiceContext, ServiceDefinition } from './service.js';
export { startTelemetry } from './telemetry.js';
export type { Telemetry, TelemetryOptions } from './telemetry.js';
export {
  activeTraceIds,
  extractTraceContext,
  injectTraceContext,
  taskParentContext,
  taskRootContext,
} from './trace-context.js';
