/**
 * Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`, each owned by one
 * account or by the shared catalogue (see ../registry/registry-scope.ts for the key layout). A run
 * resolves its agent in its own account first, then in the shared catalogue.
 *
 * Versions: every write is a new immutable version, stored under its own key, `ver.<scoped key>.<n>`
 * (never rewritten); the name's own key holds a copy of the version it points at (definition, `version`,
 * `digest`), so a task reads its agent, and which version that is, in one get, and every reader of the
 * name's key (the assembler's mirror, listings) works as before. A rollback points the name at a kept
 * version again by copying it there: no new version is made. Versions beyond the newest `keep` are
 * deleted after a write (never the current one). An entry written before versions existed reads as
 * version 1 (see migrateUnversionedAgents).
 */
import { createHash } from 'node:crypto';
import {
  AgentDefinition,
  Buckets,
  canonicalJson,
  VersionedAgent,
  type AgentDefinitionInput,
  type AgentDigest,
  type AgentVersionSummary,
  type BoundToolDigests,
} from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import type { z } from 'zod';
import { decodeJson, encodeJson } from '../json.js';
import { parseScopedKey, scopedKey, type RegistryScope } from '../registry/registry-scope.js';
import {
  accountsWithEntries,
  listInLookupOrder,
  listScope,
  resolveInLookupOrder,
  type DefinitionBucket,
} from '../registry/scoped-entries.js';
import { listLatestKeys } from './latest-keys.js';

/** An agent and where it was found. */
export interface ScopedAgent {
  agent: VersionedAgent;
  scope: RegistryScope;
}

/** The versions of one agent kept in its scope, newest first, and the one its name points at. */
export interface AgentVersions {
  current: number;
  versions: AgentVersionSummary[];
}

export interface AgentWriteOptions {
  /** Versions kept after this write, the newest ones (at least 1); default {@link DEFAULT_AGENT_VERSIONS_KEPT}. */
  keep?: number;
  /** The digests of the agent's bound tools at this write (see BoundToolDigests). */
  toolDigests?: BoundToolDigests;
  now?: () => Date;
}

export const DEFAULT_AGENT_VERSIONS_KEPT = 50;

/** First token of a version's key: neither `shared` nor `acct`, so no version key reads as a name's key. */
const VERSION_TOKEN = 'ver';
/** Compare-and-set tries of one write before it gives up (only concurrent writers of one agent contend). */
const MAX_WRITE_TRIES = 16;

/** `sha256:` of the canonical JSON of the definition (its version fields left out). */
export function agentDigest(agent: AgentDefinitionInput): AgentDigest {
  const definition = AgentDefinition.parse(withoutStamp(agent));
  return `sha256:${createHash('sha256').update(canonicalJson(definition)).digest('hex')}`;
}

export class AgentStore {
  private readonly bucket: DefinitionBucket<typeof StoredAgent>;

  constructor(private readonly kv: KV) {
    this.bucket = { kv, name: Buckets.AGENTS, schema: StoredAgent };
  }

  /** The agent's current version in `scope`. */
  async get(scope: RegistryScope, workflowId: string): Promise<VersionedAgent | undefined> {
    return (await this.readCurrent(scope, workflowId))?.agent;
  }

  /**
   * The agent a task or caller of `from` gets under `workflowId`: an account's own of that id, else the
   * shared catalogue's.
   */
  async resolve(from: RegistryScope, workflowId: string): Promise<ScopedAgent | undefined> {
    const resolved = await resolveInLookupOrder(from, (scope) => this.get(scope, workflowId));
    return resolved && { agent: resolved.found, scope: resolved.scope };
  }

  /** Every agent `from` sees: its own, then the shared ones it does not shadow. */
  async listVisible(from: RegistryScope): Promise<ScopedAgent[]> {
    const visible = await listInLookupOrder(this.bucket, from, (agent) => agent.workflow_id);
    return visible.map(({ found, scope }) => ({ agent: stamped(found), scope }));
  }

  /**
   * Validates and stores an agent in `scope` as a new version, and points the name at it; returns it as
   * stored (defaults applied, with its version and digest).
   */
  async put(
    scope: RegistryScope,
    agent: AgentDefinitionInput,
    options: AgentWriteOptions = {},
  ): Promise<VersionedAgent> {
    const definition = AgentDefinition.parse(withoutStamp(agent));
    const workflowId = definition.workflow_id;
    const keep = Math.max(1, options.keep ?? DEFAULT_AGENT_VERSIONS_KEPT);
    const created_at = (options.now?.() ?? new Date()).toISOString();
    const digest = agentDigest(definition);
    await this.saveUnversioned(scope, workflowId);
    for (let tries = 0; tries < MAX_WRITE_TRIES; tries++) {
      const numbers = await this.versionNumbers(scope, workflowId);
      const current = await this.readCurrent(scope, workflowId);
      const version = Math.max(0, current?.agent.version ?? 0, ...numbers) + 1;
      const stored = VersionedAgent.parse({
        ...definition,
        version,
        digest,
        created_at,
        ...(options.toolDigests && { tool_digests: options.toolDigests }),
      });
      // Exclusive: two writers never make the same version; the loser counts again.
      if (!(await this.tryCreate(versionKey(scope, workflowId, version), stored))) continue;
      await this.pointAt(scope, workflowId, stored);
      await this.prune(scope, workflowId, version, keep);
      return stored;
    }
    throw new Error(`agent ${workflowId}: too many concurrent writes; try again`);
  }

  /** One kept version of the agent in `scope`; undefined when the agent or that version is not kept. */
  async getVersion(
    scope: RegistryScope,
    workflowId: string,
    version: number,
  ): Promise<VersionedAgent | undefined> {
    const entry = await this.kv.get(versionKey(scope, workflowId, version));
    if (entry?.operation === 'PUT') {
      return decodeJson(VersionedAgent, entry.value, `${Buckets.AGENTS}/${entry.key}`);
    }
    // An agent stored before versions existed is its own version 1 until its first write saves it.
    const current = await this.readCurrent(scope, workflowId);
    return current?.unversioned && version === 1 ? current.agent : undefined;
  }

  /**
   * The pinned version of the agent `from` gets under `workflowId` (its own account's, else the shared
   * catalogue's): `agent` undefined when the agent exists but that version is not kept.
   */
  async resolveVersion(
    from: RegistryScope,
    workflowId: string,
    version: number,
  ): Promise<{ scope: RegistryScope; agent: VersionedAgent | undefined } | undefined> {
    const found = await this.resolve(from, workflowId);
    if (!found) return undefined;
    const agent =
      found.agent.version === version ? found.agent : await this.getVersion(found.scope, workflowId, version);
    return { scope: found.scope, agent };
  }

  /** The versions kept of the agent in `scope`, newest first; undefined when there is no such agent. */
  async versions(scope: RegistryScope, workflowId: string): Promise<AgentVersions | undefined> {
    const current = await this.readCurrent(scope, workflowId);
    if (!current) return undefined;
    const numbers = await this.versionNumbers(scope, workflowId);
    if (current.unversioned && !numbers.includes(1)) numbers.push(1);
    const kept = await Promise.all(
      numbers.sort((a, b) => b - a).map((version) => this.getVersion(scope, workflowId, version)),
    );
    return {
      current: current.agent.version,
      versions: kept
        .filter((agent) => agent !== undefined)
        .map((agent) => ({
          version: agent.version,
          digest: agent.digest,
          ...(agent.created_at !== undefined && { created_at: agent.created_at }),
          current: agent.version === current.agent.version,
        })),
    };
  }

  /**
   * Points the agent's name at a kept version (no new version is made); returns it, or undefined when the
   * agent or that version is not kept.
   */
  async rollback(
    scope: RegistryScope,
    workflowId: string,
    version: number,
  ): Promise<VersionedAgent | undefined> {
    if (!(await this.readCurrent(scope, workflowId))) return undefined;
    await this.saveUnversioned(scope, workflowId);
    const target = await this.getVersion(scope, workflowId, version);
    if (!target) return undefined;
    await this.pointAt(scope, workflowId, target);
    return target;
  }

  /** True when the agent existed in `scope`; its kept versions go with it. */
  async delete(scope: RegistryScope, workflowId: string): Promise<boolean> {
    const existed = (await this.get(scope, workflowId)) !== undefined;
    if (existed) await this.kv.delete(scopedKey(scope, workflowId));
    for (const version of await this.versionNumbers(scope, workflowId)) {
      await this.kv.purge(versionKey(scope, workflowId, version));
    }
    return existed;
  }

  /** The accounts that have agents of their own. */
  async accountIds(): Promise<Set<string>> {
    return accountsWithEntries(this.kv);
  }

  /** The agents of one scope, by workflow id. */
  async list(scope: RegistryScope): Promise<VersionedAgent[]> {
    return (await listScope(this.bucket, scope)).map(stamped);
  }

  /**
   * Saves an agent stored before versions existed as its version 1 and stamps its name's entry, so its
   * next write is version 2 and a rollback to 1 finds it. Idempotent; a no-op for a versioned agent.
   */
  async saveUnversioned(scope: RegistryScope, workflowId: string): Promise<boolean> {
    const current = await this.readCurrent(scope, workflowId);
    if (!current?.unversioned) return false;
    await this.tryCreate(versionKey(scope, workflowId, 1), current.agent);
    try {
      await this.kv.update(scopedKey(scope, workflowId), encodeJson(current.agent), current.revision);
    } catch {
      // Written meanwhile: whoever wrote it stamped it.
    }
    return true;
  }

  private async readCurrent(
    scope: RegistryScope,
    workflowId: string,
  ): Promise<{ agent: VersionedAgent; revision: number; unversioned: boolean } | undefined> {
    const key = scopedKey(scope, workflowId);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    const raw: unknown = JSON.parse(new TextDecoder().decode(entry.value));
    const versioned = VersionedAgent.safeParse(raw);
    if (versioned.success) return { agent: versioned.data, revision: entry.revision, unversioned: false };
    const legacy = decodeJson(AgentDefinition, entry.value, `${Buckets.AGENTS}/${key}`);
    return { agent: stamped(legacy), revision: entry.revision, unversioned: true };
  }

  /** Makes `target` the name's entry, whatever was written there meanwhile (last writer wins). */
  private async pointAt(scope: RegistryScope, workflowId: string, target: VersionedAgent): Promise<void> {
    await this.kv.put(scopedKey(scope, workflowId), encodeJson(target));
  }

  private async prune(scope: RegistryScope, workflowId: string, newest: number, keep: number): Promise<void> {
    const current = (await this.get(scope, workflowId))?.version;
    for (const version of await this.versionNumbers(scope, workflowId)) {
      if (version <= newest - keep && version !== current) {
        await this.kv.purge(versionKey(scope, workflowId, version));
      }
    }
  }

  private async versionNumbers(scope: RegistryScope, workflowId: string): Promise<number[]> {
    const prefix = `${VERSION_TOKEN}.${scopedKey(scope, workflowId)}.`;
    const keys = await listLatestKeys(this.kv, `${prefix}*`);
    const numbers = keys.map((key) => Number(key.slice(prefix.length))).filter(Number.isSafeInteger);
    return [...new Set(numbers)];
  }

  private async tryCreate(key: string, value: VersionedAgent): Promise<boolean> {
    try {
      await this.kv.create(key, encodeJson(value));
      return true;
    } catch (error) {
      if ((await this.kv.get(key))?.operation === 'PUT') return false;
      throw error;
    }
  }
}

/**
 * Stamps every agent stored before versions existed (in any scope) as version 1: saves it under its
 * version key and adds `version` and `digest` to its name's entry. Idempotent: run at every gateway start;
 * reads treat such an agent as version 1 until then. Returns the keys stamped.
 */
export async function migrateUnversionedAgents(kv: KV): Promise<string[]> {
  const store = new AgentStore(kv);
  const stamped: string[] = [];
  for (const key of await listLatestKeys(kv, '>')) {
    const parsed = parseScopedKey(key);
    if (!parsed) continue;
    if (await store.saveUnversioned(parsed.scope, parsed.name)) stamped.push(key);
  }
  return stamped;
}

/** The key of one version: `ver.` before the name's key, the number after it. */
export function versionKey(scope: RegistryScope, workflowId: string, version: number): string {
  return `${VERSION_TOKEN}.${scopedKey(scope, workflowId)}.${version}`;
}

/** True for a key of `mesh_agents` holding a version (not a name's current entry). */
export function isAgentVersionKey(key: string): boolean {
  return key.startsWith(`${VERSION_TOKEN}.`);
}

/** A name's entry in `mesh_agents`: versioned, or written before versions existed (no version fields). */
export const StoredAgent = VersionedAgent.partial({ version: true, digest: true });
export type StoredAgent = z.infer<typeof StoredAgent>;

/** The agent with its version; an entry written before versions existed reads as version 1. */
export function stamped(agent: StoredAgent): VersionedAgent {
  const { version, digest } = agent;
  if (version !== undefined && digest !== undefined) return { ...agent, version, digest };
  return { ...agent, version: 1, digest: agentDigest(agent) };
}

function withoutStamp(agent: AgentDefinitionInput): AgentDefinitionInput {
  const {
    version: _version,
    digest: _digest,
    created_at: _createdAt,
    tool_digests: _toolDigests,
    ...definition
  } = agent as AgentDefinitionInput & Record<string, unknown>;
  return definition as AgentDefinitionInput;
}
