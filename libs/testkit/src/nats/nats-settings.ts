/**
 * Where NATS for tests comes from. The environment is read here and nowhere deeper: the image
 * (`AGENTMESH_NATS_IMAGE`, default the official `nats:2.10`), the mode (`AGENTMESH_NATS_MODE`:
 * `container`, the default, or `process` for machines without Docker) and the binary the process
 * mode runs (`AGENTMESH_NATS_SERVER_BIN`, default `nats-server` on PATH). Options win over the
 * environment.
 */
export const NatsMode = {
  container: 'container',
  process: 'process',
} as const;
export type NatsMode = (typeof NatsMode)[keyof typeof NatsMode];

export const DEFAULT_NATS_IMAGE = 'nats:2.10';

export interface NatsSettingsOptions {
  mode?: NatsMode;
  image?: string;
  binary?: string;
}

export interface NatsSettings {
  mode: NatsMode;
  image: string;
  binary: string;
  /** Why this mode was chosen, for the line announcing a process-mode server. */
  modeSource: 'option' | 'environment' | 'default';
}

export function resolveNatsSettings(
  options: NatsSettingsOptions = {},
  env: Record<string, string | undefined> = process.env,
): NatsSettings {
  const envMode = env['AGENTMESH_NATS_MODE']?.trim();
  if (envMode && !isNatsMode(envMode)) {
    throw new Error(
      `AGENTMESH_NATS_MODE must be "container" or "process", got "${envMode}" (unset means container)`,
    );
  }
  if (options.mode !== undefined && !isNatsMode(options.mode)) {
    throw new Error(`NATS mode must be "container" or "process", got "${String(options.mode)}"`);
  }
  const mode = options.mode ?? (envMode as NatsMode | undefined) ?? NatsMode.container;
  return {
    mode,
    modeSource: options.mode ? 'option' : envMode ? 'environment' : 'default',
    image: options.image ?? (env['AGENTMESH_NATS_IMAGE']?.trim() || DEFAULT_NATS_IMAGE),
    binary: options.binary ?? (env['AGENTMESH_NATS_SERVER_BIN']?.trim() || 'nats-server'),
  };
}

function isNatsMode(value: string): value is NatsMode {
  return Object.values<string>(NatsMode).includes(value);
}
