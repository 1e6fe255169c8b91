/**
 * Tests run the real gateway in-process: its configuration parsed from an environment exactly as the
 * service does, its own NATS connection, HTTP on an ephemeral port, and every log line captured so a
 * test can assert that no secret was logged.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AgentStore, openMeshBuckets, SHARED_CATALOGUE } from '@agentmesh/bus';
import { createLogger, loadConfig } from '@agentmesh/runtime';
import { generateVaultKeyPair, type VaultKeyPair } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { gatewayConfigSchema, type GatewayConfig } from '../config.js';
import { startGateway, type RunningGateway } from '../gateway.js';
import type { SchedulerClock } from '../schedules/clock.js';

export interface TestGateway {
  url: string;
  gateway: RunningGateway;
  config: Readonly<GatewayConfig>;
  /** The executors' key pair the gateway seals pre-assembled vaults for. */
  vaultKeys: VaultKeyPair;
  /** Every log line written so far, raw. */
  logs: string[];
  stop(): Promise<void>;
}

export async function startTestGateway(
  natsUrl: string,
  env: Record<string, string> = {},
  vaultKeys: VaultKeyPair = generateVaultKeyPair('executors-1'),
  options: { clock?: SchedulerClock } = {},
): Promise<TestGateway> {
  const config = loadConfig(gatewayConfigSchema, {
    NATS_URL: natsUrl,
    HTTP_PORT: '0',
    LOG_LEVEL: 'debug',
    VAULT_KEY_ID: vaultKeys.kid,
    VAULT_PUBLIC_KEY: vaultKeys.publicKey,
    CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
    CREDENTIALS_MASTER_KEY_ID: 'master-1',
    ...env,
  });
  const logs: string[] = [];
  const log = createLogger({
    service: 'gateway',
    level: 'debug',
    destination: { write: (line) => void logs.push(line) },
  });
  const nc: NatsConnection = await connect({ servers: natsUrl, name: 'gateway-under-test' });
  const gateway = await startGateway({ config, log, nc, ...(options.clock ? { clock: options.clock } : {}) });
  return {
    url: gateway.url,
    gateway,
    config,
    vaultKeys,
    logs,
    async stop() {
      await gateway.stop();
      await nc.drain();
    },
  };
}

/**
 * Stores agents of these workflow ids in the shared catalogue, so every account's tasks naming them pass
 * the gateway's check that a task names an agent (their model is never called: no assembler runs here).
 */
export async function putSharedAgents(natsUrl: string, ...workflowIds: string[]): Promise<void> {
  const nc = await connect({ servers: natsUrl, name: 'test-agents' });
  try {
    const { agents } = await openMeshBuckets(jetstream(nc), { only: ['agents'] });
    const store = new AgentStore(agents);
    for (const workflowId of workflowIds) {
      await store.put(SHARED_CATALOGUE, {
        workflow_id: workflowId,
        model: { model_name: 'test-model', base_url: 'http://127.0.0.1:9/v1' },
      });
    }
  } finally {
    await nc.close();
  }
}

/** Parsed JSON as tests read it: loosely, because the assertions are the type check. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** A JSON fixture of the seed documents (kept in the protocol package). */
export function seedFixture(name: string): Record<string, Json> {
  const file = new URL(`../../../../libs/protocol/src/__fixtures__/seeds/${name}`, import.meta.url);
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, Json>;
}

export interface HttpResult {
  status: number;
  /** Response headers, names in lower case. */
  headers: Record<string, string>;
  text: string;
  /** The parsed JSON body; undefined when empty or not JSON. */
  body: Json;
}

/** One JSON request; `body` is sent as JSON unless it is a string (sent as is). */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...options.headers };
  let payload: string | undefined;
  if (options.body !== undefined) {
    payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(payload !== undefined ? { body: payload } : {}),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: Object.fromEntries(response.headers), text, body };
}

export const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });
