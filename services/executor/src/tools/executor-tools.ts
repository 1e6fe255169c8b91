/**
 * The executor's tool runners, built once from its configuration and shared by every task: the guarded
 * HTTP client (HTTP plugins, dynamic tools and MCP servers send through the same one), the script sandbox
 * (when a scripts directory is configured; it also starts stdio MCP servers), the MCP sessions and the
 * native tools. Also announces the native tools as provided by
 * this instance for as long as it runs; the announcements carry their definitions, which the assembler
 * mirrors into the registry (executors may not write it).
 */
import { ScriptRunner, type RunnerCapabilities } from '@agentmesh/script-runner';
import type { Logger } from '@agentmesh/runtime';
import { openNativeProvidersBucket, type ResourceWaitOptions } from '@agentmesh/bus';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ExecutorConfig } from '../config.js';
import {
  executeScriptTool,
  NativeProviderAnnouncer,
  NativeToolRegistry,
  recallActionsTool,
  ScriptTools,
} from './native/index.js';
import type { ToolRunners } from './tool-dispatch.js';
import { DynamicToolRunner, HttpToolRunner } from './index.js';
import { McpConnections, McpToolRunner, sandboxStdioLauncher } from './mcp/index.js';
import { A2aToolRunner } from './a2a/index.js';

const MIB = 1024 * 1024;

export interface ExecutorToolRunners {
  readonly runners: ToolRunners;
  close(): Promise<void>;
}

export function createToolRunners(config: ExecutorConfig, nc: NatsConnection): ExecutorToolRunners {
  const http = new HttpToolRunner({
    guard: { allowHosts: config.OUTBOUND_ALLOW_HOSTS },
    maxResponseBytes: config.TOOL_RESULT_MAX_BYTES,
    defaultTimeoutMs: config.TOOL_TIMEOUT_MS,
  });
  const dynamic = new DynamicToolRunner({ client: http.client });
  const scripts = config.SCRIPTS_DIR === undefined ? undefined : scriptTools(config, config.SCRIPTS_DIR);
  const native = new NativeToolRegistry([recallActionsTool({ nc, timeoutMs: config.RECALL_TIMEOUT_MS })]);
  if (scripts !== undefined) native.add(executeScriptTool(scripts));
  // MCP servers are reached through the HTTP tools' guard and pinned-DNS agent, and stdio ones through the
  // script sandbox when this executor has one.
  const connections = new McpConnections({
    transports: {
      guard: http.client.transport.guard,
      dispatcher: http.client.transport.dispatcher,
      ...(scripts === undefined ? {} : { stdio: sandboxStdioLauncher(scripts.runner) }),
    },
    listTtlMs: config.MCP_TOOL_LIST_TTL_MS,
    idleMs: config.MCP_CONNECTION_IDLE_MS,
    maxSessions: config.MCP_MAX_CONNECTIONS,
    connectTimeoutMs: config.TOOL_TIMEOUT_MS,
  });
  const mcp = new McpToolRunner({
    connections,
    defaultTimeoutMs: config.TOOL_TIMEOUT_MS,
    maxResultBytes: config.TOOL_RESULT_MAX_BYTES,
  });
  // Remote A2A agents are reached through the same guard and pinned-DNS agent.
  const a2a = new A2aToolRunner({
    guard: http.client.transport.guard,
    dispatcher: http.client.transport.dispatcher,
    defaultTimeoutMs: config.A2A_TOOL_TIMEOUT_MS,
    maxResultBytes: config.TOOL_RESULT_MAX_BYTES,
    cards: {
      maxBytes: config.A2A_CARD_MAX_BYTES,
      ttlMs: config.A2A_CARD_TTL_MS,
      timeoutMs: config.TOOL_TIMEOUT_MS,
    },
  });
  return {
    runners: { http, dynamic, native, mcp, a2a, ...(scripts === undefined ? {} : { scripts }) },
    async close() {
      await connections.close();
      await dynamic.close();
      await http.close();
    },
  };
}

function scriptTools(config: ExecutorConfig, baseDir: string): ScriptTools {
  const runner = new ScriptRunner({
    baseDir,
    cacheDir: config.SCRIPTS_CACHE_DIR,
    // The runner passes scripts only the allow-listed variables of it.
    hostEnv: process.env,
    defaultTimeoutMs: config.SCRIPT_TIMEOUT_MS,
    maxInputBytes: config.SCRIPT_MAX_INPUT_BYTES,
    maxOutputBytes: config.SCRIPT_MAX_OUTPUT_BYTES,
    limits: {
      cpuSeconds: config.SCRIPT_CPU_SECONDS,
      memoryBytes: config.SCRIPT_MEMORY_MB * MIB,
      maxProcesses: config.SCRIPT_MAX_PROCESSES,
      runMemoryBytes: (config.SCRIPT_RUN_MEMORY_MB ?? config.SCRIPT_MEMORY_MB) * MIB,
      cpuWeight: config.SCRIPT_CPU_WEIGHT,
      scratchBytes: config.SCRIPT_SCRATCH_MB * MIB,
    },
    envAllowList: config.SCRIPT_ENV_ALLOW_LIST,
    allowWritePaths: config.SCRIPT_ALLOW_WRITE_PATHS,
    allowReadPaths: config.SCRIPT_ALLOW_READ_PATHS,
    runtimePaths: config.SCRIPT_RUNTIME_PATHS,
    allowNetworkHosts: config.SCRIPT_ALLOW_NETWORK_HOSTS,
    requireIsolation: config.SCRIPT_REQUIRE_ISOLATION,
    stderrIsError: config.SCRIPT_STDERR_IS_ERROR,
  });
  return new ScriptTools({
    runner,
    defaultTimeoutMs: config.SCRIPT_TIMEOUT_MS,
    maxTimeoutMs: config.SCRIPT_MAX_TIMEOUT_MS,
    capabilities: config.SCRIPT_CAPABILITIES,
    maxConcurrentRuns: config.SCRIPT_MAX_CONCURRENT_RUNS,
  });
}

/**
 * Logs once, at start, what isolates script runs on this host: the namespace sandbox or not, and whether
 * a run's processes share one cgroup (memory, tasks, CPU) or only the per-process rlimits hold.
 */
export async function logScriptSandbox(runner: ScriptRunner, log: Logger): Promise<void> {
  let capabilities: RunnerCapabilities;
  try {
    capabilities = await runner.capabilities();
  } catch (error) {
    log.warn({ err: error }, 'script sandbox: probing the host failed; script runs will fail');
    return;
  }
  const { message, warn, fields } = describeScriptSandbox(capabilities);
  if (warn) log.warn(fields, message);
  else log.info(fields, message);
}

export function describeScriptSandbox(capabilities: RunnerCapabilities): {
  message: string;
  warn: boolean;
  fields: Record<string, unknown>;
} {
  const fields = {
    isolation: capabilities.isolation,
    cgroup: capabilities.cgroup?.version ?? null,
    scratch_mib: capabilities.scratchBytes / MIB,
  };
  if (!capabilities.isolation) {
    return {
      warn: true,
      fields,
      message: `script sandbox: no namespace sandbox (${capabilities.isolationUnavailable ?? 'unavailable'}): scripts are refused, or with SCRIPT_REQUIRE_ISOLATION=false run with the uid drop and per-process rlimits only`,
    };
  }
  const base = `script sandbox: namespaces (mount, pid, net, ipc, uts), scratch tmpfs of ${capabilities.scratchBytes / MIB} MiB per run`;
  if (capabilities.cgroup !== undefined) {
    return {
      warn: false,
      fields,
      message: `${base}, one cgroup per run: ${capabilities.cgroup.description}`,
    };
  }
  return {
    warn: true,
    fields,
    message: `${base}; no cgroup per run (${capabilities.cgroupUnavailable ?? 'unavailable'}): only the per-process rlimits hold, not a limit on a run's processes together`,
  };
}

export interface PublishedNativeTools {
  /** Withdraws this instance's announcements. */
  stop(): Promise<void>;
}

/** Announces the native tools, with their definitions, in `mesh_native_providers`. */
export async function publishNativeTools(
  js: JetStreamClient,
  registry: NativeToolRegistry,
  options: {
    executorId: string;
    ttlMs: number;
    replicas?: number;
    /** What to do while the bucket is missing and this user may not create it. */
    wait?: ResourceWaitOptions;
    log: Logger;
  },
): Promise<PublishedNativeTools> {
  const { log } = options;
  const providers = await openNativeProvidersBucket(
    js,
    { ttlMs: options.ttlMs, ...(options.replicas === undefined ? {} : { replicas: options.replicas }) },
    options.wait,
  );
  log.info({ tools: registry.definitions().map((tool) => tool.name) }, 'announcing native tools');
  const announcer = await NativeProviderAnnouncer.start(providers, {
    executorId: options.executorId,
    tools: registry.definitions(),
    ttlMs: options.ttlMs,
    onError: (error) => log.warn({ err: error }, 'renewing the native tool announcements failed'),
  });
  return { stop: () => announcer.stop() };
}
