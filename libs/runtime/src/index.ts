export { baseConfigSchema, ConfigError, loadConfig } from './config.js';
export type { BaseConfig } from './config.js';
export { createLogger } from './logger.js';
export { isSecretKey, REDACTED, redactSecrets, SECRET_KEYS } from './redaction.js';
export type { Logger, LoggerOptions } from './logger.js';
export { connectNats } from './nats-connection.js';
export type { NatsConnectionOptions } from './nats-connection.js';
export { runService } from './service.js';
export type { RunningService, ServiceContext, ServiceDefinition } from './service.js';
