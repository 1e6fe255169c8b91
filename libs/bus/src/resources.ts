/**
 * The mesh's JetStream resources, created idempotently by every service at start-up: the task stream
 * (work queue; publishes deduplicated by Nats-Msg-Id), the event stream (limits retention, bounded
 * age) and the KV buckets. A resource that exists already is left as it is.
 */
import { Buckets, Streams } from '@agentmesh/protocol';
import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';

export interface MeshResourceOptions {
  /** Stream and bucket replicas (3 on a cluster). */
  replicas?: number;
  /** How long a task's events are kept for replay. */
  eventsMaxAgeMs?: number;
  /** Window in which a resubmitted task (same trace_id) is dropped as a duplicate. */
  duplicateWindowMs?: number;
  /** How long an idempotency key keeps answering with its trace_id. */
  idempotencyTtlMs?: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const nanos = (ms: number): number => ms * 1_000_000;

async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
): Promise<void> {
  try {
    await jsm.streams.info(config.name);
  } catch (error) {
    if (!(error instanceof JetStreamApiError) || error.code !== JetStreamApiCodes.StreamNotFound) throw error;
    await jsm.streams.add(config);
  }
}

export async function ensureMeshStreams(
  jsm: JetStreamManager,
  options: MeshResourceOptions = {},
): Promise<void> {
  const replicas = options.replicas ?? 1;
  await ensureStream(jsm, {
    name: Streams.TASKS.name,
    subjects: [...Streams.TASKS.subjects],
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: replicas,
    duplicate_window: nanos(options.duplicateWindowMs ?? 10 * 60 * 1000),
  });
  await ensureStream(jsm, {
    name: Streams.EVENTS.name,
    subjects: [...Streams.EVENTS.subjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: replicas,
    max_age: nanos(options.eventsMaxAgeMs ?? DAY_MS),
    duplicate_window: nanos(2 * 60 * 1000),
  });
}

export interface MeshBuckets {
  agents: KV;
  plugins: KV;
  credentials: KV;
  tasks: KV;
  idempotency: KV;
  apiKeys: KV;
}

/** Opens (creating when missing) every KV bucket of the mesh. */
export async function openMeshBuckets(
  js: JetStreamClient,
  options: MeshResourceOptions = {},
): Promise<MeshBuckets> {
  const kvm = new Kvm(js);
  const replicas = options.replicas ?? 1;
  const open = (name: string, extra: { ttl?: number; history?: number } = {}): Promise<KV> =>
    kvm.create(name, { replicas, history: extra.history ?? 1, ...(extra.ttl ? { ttl: extra.ttl } : {}) });
  const [agents, plugins, credentials, tasks, idempotency, apiKeys] = await Promise.all([
    open(Buckets.AGENTS, { history: 5 }),
    open(Buckets.PLUGINS, { history: 5 }),
    open(Buckets.CREDENTIALS),
    open(Buckets.TASKS, { ttl: options.eventsMaxAgeMs ?? 7 * DAY_MS }),
    open(Buckets.IDEMPOTENCY, { ttl: options.idempotencyTtlMs ?? DAY_MS }),
    open(Buckets.API_KEYS),
  ]);
  return { agents, plugins, credentials, tasks, idempotency, apiKeys };
}

/** How long a native tool announcement lives without renewal, when the bucket is created with no TTL given. */
export const DEFAULT_NATIVE_PROVIDER_TTL_MS = 30_000;

/**
 * Opens `mesh_native_providers` (which executor provides which native tool class now), creating it with
 * `ttlMs` when missing; an existing bucket keeps its own TTL.
 */
export async function openNativeProvidersBucket(
  js: JetStreamClient,
  options: { ttlMs?: number; replicas?: number } = {},
): Promise<KV> {
  return new Kvm(js).create(Buckets.NATIVE_PROVIDERS, {
    history: 1,
    ttl: options.ttlMs ?? DEFAULT_NATIVE_PROVIDER_TTL_MS,
    replicas: options.replicas ?? 1,
  });
}
