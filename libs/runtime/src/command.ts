/**
 * The life of a one-shot command (the provisioner, `rekey-credentials`): read its config (a bad variable
 * is one line on stderr and exit 1), log in to NATS with a single attempt (an operator's or a deploy
 * step's run should fail visibly rather than wait forever), do the work, drain and exit with the code the
 * work returns; anything thrown is logged as fatal and exits 1.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { z } from 'zod';
import { ConfigError, loadConfig, type BaseConfig } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { natsConnectionOptions } from './nats-connection.js';

export interface CommandContext<C> {
  config: Readonly<C>;
  log: Logger;
  nc: NatsConnection;
}

export interface CommandDefinition<S extends z.ZodType<BaseConfig>> {
  /** Names the command in its log lines and its NATS connection. */
  name: string;
  configSchema: S;
  /** What a failure is logged as, e.g. "provisioning failed". */
  failure: string;
  /** Does the work; resolves with the exit code. */
  run(context: CommandContext<z.infer<S>>): Promise<number>;
}

export async function runCommand<S extends z.ZodType<BaseConfig>>(
  command: CommandDefinition<S>,
): Promise<never> {
  let config: Readonly<z.infer<S>>;
  let options: ReturnType<typeof natsConnectionOptions>;
  try {
    config = loadConfig(command.configSchema);
    options = natsConnectionOptions({ settings: config, name: command.name });
  } catch (error) {
    process.stderr.write(
      `${command.name}: ${error instanceof ConfigError ? error.message : String(error)}\n`,
    );
    process.exit(1);
  }
  const log = createLogger({ service: command.name, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  let nc: NatsConnection | undefined;
  try {
    nc = await connect({ ...options, waitOnFirstConnect: false, maxReconnectAttempts: 0 });
    const code = await command.run({ config, log, nc });
    await nc.drain();
    process.exit(code);
  } catch (error) {
    log.fatal({ err: error }, command.failure);
    await nc?.close().catch(() => undefined);
    process.exit(1);
  }
}
