/**
 * The mesh's JetStream resources: the task stream (work queue; publishes deduplicated by Nats-Msg-Id),
 * the event stream (limits retention, bounded age; stores `mesh.eventlog.>` and republishes each stored
 * event onto `mesh.events.>`) and the KV buckets. A resource that exists already is left as it is, with
 * one exception: an event stream of an earlier release (which stored `mesh.events.>` itself and
 * republished nothing) has its subjects and republish brought up to date (`ensureMeshStreams`,
 * `provisionMeshResources`), since followers would otherwise see nothing at all.
 *
 * The dead-letter stream (limits retention, one message per task, long max age) is opened only by the
 * services that use it (executor, gateway): `ensureDeadLetterStream`; so is the stream that keeps
 * MESH_TASKS' MAX_DELIVERIES advisories until an executor has handled them (`ensureTaskAdvisoryStream`).
 *
 * Who creates them: `provisionMeshResources` (run at deploy by the `provisioner` NATS user, see
 * provision.ts) creates every one. A service opens only what it uses; when something is missing it
 * creates it itself if its NATS user may (development, `npm start` without auth, the tests), and
 * otherwise waits for the provisioning, polling, and tells `onWaiting` what it waits for.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Buckets, Streams, type Bucket } from '@agentmesh/protocol';
import {
  DiscardPolicy,
  RetentionPolicy,
  StorageType,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type Republish,
  type StreamConfig,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { nanos, PermissionViolationError } from '@nats-io/transport-node';
import { StreamUpdateRefusedError } from './errors.js';
import { isJetStreamApiError } from './jetstream-api-error.js';

export interface MeshResourceOptions {
  /** Stream and bucket replicas (3 on a cluster). */
  replicas?: number;
  /**
   * How long a task's events are kept for replay (MESH_EVENTS max age) and its status record lives
   * (`mesh_tasks` TTL, from its last write). One value for both: a status that outlived its events
   * would promise a replay that cannot come. Default {@link DEFAULT_TASK_RETENTION_MS}.
   */
  taskRetentionMs?: number;
  /** Window in which a resubmitted task (same trace_id) is dropped as a duplicate. */
  duplicateWindowMs?: number;
  /** How long an idempotency key keeps answering with its trace_id. */
  idempotencyTtlMs?: number;
  /** How long a dead letter is kept (MESH_DEAD_LETTERS max age). Default {@link DEFAULT_DEAD_LETTER_RETENTION_MS}. */
  deadLetterRetentionMs?: number;
  /** How long a thread's entries are kept (MESH_THREADS max age). Default {@link DEFAULT_THREAD_RETENTION_MS}. */
  threadRetentionMs?: number;
  /** Entries kept per thread (oldest dropped). Default {@link DEFAULT_THREAD_MAX_ENTRIES}. */
  threadMaxEntries?: number;
}

/**
 * A resource a service needs that does not exist and that its NATS user may not create, or (`outdated`)
 * a stream whose subjects an earlier release set and that this user may not update.
 */
export interface MissingResource {
  kind: 'stream' | 'bucket';
  name: string;
  outdated?: true;
  /** How long this resource has been waited for. */
  waitedMs: number;
}

export interface ResourceWaitOptions {
  /** Told when a resource is missing and cannot be created here; again every `reportEveryMs`. */
  onWaiting?: (missing: MissingResource) => void;
  /** Pause between checks. Default 2 s. */
  retryDelayMs?: number;
  /** How often a wait is reported again. Default 30 s. */
  reportEveryMs?: number;
  /** Ends the wait (the call rejects with the signal's reason). */
  signal?: AbortSignal;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** How long a task's events and its status record are kept, unless told otherwise. */
export const DEFAULT_TASK_RETENTION_MS = DAY_MS;

/** How long an account's daily usage entry lives (`mesh_account_usage` TTL, from its last write). */
export const ACCOUNT_USAGE_TTL_MS = 2 * DAY_MS;
/** Entries of mesh_model_limits: minute counters live a few minutes; held slots are renewed within it. */
export const MODEL_LIMITS_TTL_MS = 5 * 60 * 1000;

/** How long a schedule's firing (its claim and its run record) is kept. */
export const SCHEDULE_FIRING_TTL_MS = 30 * DAY_MS;

/** How long a dead letter is kept, unless told otherwise: long enough for an operator to look after a holiday. */
export const DEFAULT_DEAD_LETTER_RETENTION_MS = 14 * DAY_MS;

/** The request behind `error` was refused because this NATS user may not create JetStream resources. */
function creationRefused(error: unknown): boolean {
  const violation =
    error instanceof PermissionViolationError
      ? error
      : (error as { cause?: unknown } | undefined)?.cause instanceof PermissionViolationError
        ? (error as { cause: PermissionViolationError }).cause
        : undefined;
  return violation?.operation === 'publish' && /\.STREAM\.CREATE\./.test(violation.subject);
}

/** The request behind `error` was refused because this NATS user may not update JetStream streams. */
function updateRefused(error: unknown): boolean {
  const violation =
    error instanceof PermissionViolationError
      ? error
      : (error as { cause?: unknown } | undefined)?.cause instanceof PermissionViolationError
        ? (error as { cause: PermissionViolationError }).cause
        : undefined;
  return violation?.operation === 'publish' && /\.STREAM\.UPDATE\./.test(violation.subject);
}

function streamMissing(error: unknown): boolean {
  return isJetStreamApiError(error, JetStreamApiCodes.StreamNotFound);
}

async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (error) {
    if (streamMissing(error)) return false;
    throw error;
  }
}

/**
 * Runs `create` when the JetStream stream `stream` is missing; if this user may not create it, waits
 * until someone else has (checking with stream info only, so the wait costs no refused requests).
 */
async function existOrWait(
  jsm: JetStreamManager,
  missing: Omit<MissingResource, 'waitedMs'> & { stream: string },
  create: () => Promise<unknown>,
  wait: ResourceWaitOptions,
): Promise<void> {
  if (await streamExists(jsm, missing.stream)) return;
  try {
    await create();
    return;
  } catch (error) {
    if (!creationRefused(error)) throw error;
  }
  const started = Date.now();
  const retryDelayMs = wait.retryDelayMs ?? 2_000;
  const reportEveryMs = wait.reportEveryMs ?? 30_000;
  let reportedAt = -Infinity;
  for (;;) {
    const waitedMs = Date.now() - started;
    if (waitedMs - reportedAt >= reportEveryMs) {
      wait.onWaiting?.({ kind: missing.kind, name: missing.name, waitedMs });
      reportedAt = waitedMs;
    }
    await sleep(retryDelayMs, undefined, wait.signal ? { signal: wait.signal } : {});
    if (await streamExists(jsm, missing.stream)) return;
  }
}

/** The settings of a mesh stream that a later release may change on an existing stream. */
type UpdatableStreamSettings = Pick<StreamConfig, 'subjects'> & { republish?: Republish };

function sameSubjects(a: readonly string[] = [], b: readonly string[] = []): boolean {
  return a.length === b.length && [...a].sort().every((subject, i) => subject === [...b].sort()[i]);
}

function sameRepublish(a: Republish | undefined, b: Republish | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.src === b.src && a.dest === b.dest && Boolean(a.headers_only) === Boolean(b.headers_only);
}

/** What must change on a stream stored as `current` to have `wanted`'s subjects and republish; undefined if nothing. */
function outdatedSettings(
  current: StreamConfig,
  wanted: Partial<StreamConfig>,
): UpdatableStreamSettings | undefined {
  const subjects = wanted.subjects ?? [];
  if (sameSubjects(current.subjects, subjects) && sameRepublish(current.republish, wanted.republish))
    return undefined;
  return { subjects, ...(wanted.republish ? { republish: wanted.republish } : {}) };
}

/**
 * Brings an existing stream's subjects and republish to `wanted` (one update: subjects and republish
 * change together, so the stream never captures its own republish destination). When this user may not
 * update streams, waits until someone (the provisioning) has. Answers whether it updated the stream.
 */
async function updateOrWait(
  jsm: JetStreamManager,
  wanted: Partial<StreamConfig> & { name: string },
  wait: ResourceWaitOptions,
): Promise<boolean> {
  const outdated = async (): Promise<UpdatableStreamSettings | undefined> =>
    outdatedSettings((await jsm.streams.info(wanted.name)).config, wanted);
  const change = await outdated();
  if (change === undefined) return false;
  try {
    await jsm.streams.update(wanted.name, change);
    return true;
  } catch (error) {
    if (error instanceof JetStreamApiError) throw new StreamUpdateRefusedError(wanted.name, { cause: error });
    if (!updateRefused(error)) throw error;
  }
  const started = Date.now();
  const retryDelayMs = wait.retryDelayMs ?? 2_000;
  const reportEveryMs = wait.reportEveryMs ?? 30_000;
  let reportedAt = -Infinity;
  for (;;) {
    const waitedMs = Date.now() - started;
    if (waitedMs - reportedAt >= reportEveryMs) {
      wait.onWaiting?.({ kind: 'stream', name: wanted.name, outdated: true, waitedMs });
      reportedAt = waitedMs;
    }
    await sleep(retryDelayMs, undefined, wait.signal ? { signal: wait.signal } : {});
    if ((await outdated()) === undefined) return false;
  }
}

function meshStreamConfigs(options: MeshResourceOptions): Array<Partial<StreamConfig> & { name: string }> {
  const replicas = options.replicas ?? 1;
  const eventsMaxAgeMs = options.taskRetentionMs ?? DEFAULT_TASK_RETENTION_MS;
  return [
    {
      name: Streams.TASKS.name,
      subjects: [...Streams.TASKS.subjects],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: replicas,
      duplicate_window: nanos(options.duplicateWindowMs ?? 10 * 60 * 1000),
    },
    {
      name: Streams.EVENTS.name,
      subjects: [...Streams.EVENTS.subjects],
      // Followers' subjects carry what the stream stored, in stream order: never a refused publish.
      republish: { ...Streams.EVENTS.republish },
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      num_replicas: replicas,
      max_age: nanos(eventsMaxAgeMs),
      // JetStream refuses a duplicate window longer than the stream's max age.
      duplicate_window: nanos(Math.min(2 * 60 * 1000, eventsMaxAgeMs)),
    },
  ];
}

function deadLetterStreamConfig(options: MeshResourceOptions): Partial<StreamConfig> & { name: string } {
  const maxAgeMs = options.deadLetterRetentionMs ?? DEFAULT_DEAD_LETTER_RETENTION_MS;
  return {
    name: Streams.DEAD_LETTERS.name,
    subjects: [...Streams.DEAD_LETTERS.subjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: options.replicas ?? 1,
    max_age: nanos(maxAgeMs),
    // One letter per task: marking it re-driven replaces it.
    max_msgs_per_subject: 1,
    duplicate_window: nanos(Math.min(2 * 60 * 1000, maxAgeMs)),
  };
}

/** How long a thread's entries are kept (MESH_THREADS max age), unless told otherwise. */
export const DEFAULT_THREAD_RETENTION_MS = 30 * DAY_MS;

/** Entries one thread may hold (MESH_THREADS max messages per subject): the oldest go first. */
export const DEFAULT_THREAD_MAX_ENTRIES = 10_000;

function threadStreamConfig(options: MeshResourceOptions): Partial<StreamConfig> & { name: string } {
  const maxAgeMs = options.threadRetentionMs ?? DEFAULT_THREAD_RETENTION_MS;
  return {
    name: Streams.THREADS.name,
    subjects: [...Streams.THREADS.subjects],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: options.replicas ?? 1,
    max_age: nanos(maxAgeMs),
    max_msgs_per_subject: options.threadMaxEntries ?? DEFAULT_THREAD_MAX_ENTRIES,
    duplicate_window: nanos(Math.min(2 * 60 * 1000, maxAgeMs)),
  };
}

/** Makes sure the stream `config` names exists: created when missing and allowed, else waited for. */
async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig> & { name: string },
  wait: ResourceWaitOptions,
): Promise<void> {
  await existOrWait(
    jsm,
    { kind: 'stream', name: config.name, stream: config.name },
    () => jsm.streams.add(config),
    wait,
  );
}

/** Makes sure MESH_THREADS exists: created when missing and allowed, else waited for. */
export async function ensureThreadStream(
  jsm: JetStreamManager,
  options: MeshResourceOptions = {},
  wait: ResourceWaitOptions = {},
): Promise<void> {
  await ensureStream(jsm, threadStreamConfig(options), wait);
}

/** How long an undelivered webhook delivery is kept in MESH_WEBHOOKS (longer than its whole retry schedule). */
export const WEBHOOK_DELIVERY_MAX_AGE_MS = 7 * DAY_MS;

function webhookStreamConfig(options: MeshResourceOptions): Partial<StreamConfig> & { name: string } {
  return {
    name: Streams.WEBHOOKS.name,
    subjects: [...Streams.WEBHOOKS.subjects],
    // Each delivery is one message, gone once acknowledged (delivered, dead-lettered or queued again).
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: options.replicas ?? 1,
    max_age: nanos(WEBHOOK_DELIVERY_MAX_AGE_MS),
    // A status write read twice (a redelivery of the status consumer) queues its deliveries once.
    duplicate_window: nanos(10 * 60 * 1000),
  };
}

/** Makes sure MESH_WEBHOOKS (webhook deliveries to make) exists: created when missing and allowed, else waited for. */
export async function ensureWebhookStream(
  jsm: JetStreamManager,
  options: MeshResourceOptions = {},
  wait: ResourceWaitOptions = {},
): Promise<void> {
  await ensureStream(jsm, webhookStreamConfig(options), wait);
}

/**
 * How long a MAX_DELIVERIES advisory waits in MESH_TASK_ADVISORIES for an executor: longer than any outage
 * the mesh is expected to ride out, since the task it names is lost to its followers until it is handled.
 */
export const TASK_ADVISORY_MAX_AGE_MS = 7 * DAY_MS;

function taskAdvisoryStreamConfig(options: MeshResourceOptions): Partial<StreamConfig> & { name: string } {
  return {
    name: Streams.TASK_ADVISORIES.name,
    subjects: [...Streams.TASK_ADVISORIES.subjects],
    // nats-server publishes the advisories into it; each is gone once an executor has handled it.
    retention: RetentionPolicy.Workqueue,
    storage: StorageType.File,
    num_replicas: options.replicas ?? 1,
    max_age: nanos(TASK_ADVISORY_MAX_AGE_MS),
  };
}

/** Makes sure MESH_TASK_ADVISORIES exists: created when missing and allowed, else waited for. */
export async function ensureTaskAdvisoryStream(
  jsm: JetStreamManager,
  options: MeshResourceOptions = {},
  wait: ResourceWaitOptions = {},
): Promise<void> {
  await ensureStream(jsm, taskAdvisoryStreamConfig(options), wait);
}

/** Makes sure MESH_DEAD_LETTERS exists: created when missing and allowed, else waited for. */
export async function ensureDeadLetterStream(
  jsm: JetStreamManager,
  options: MeshResourceOptions = {},
  wait: ResourceWaitOptions = {},
): Promise<void> {
  await ensureStream(jsm, deadLetterStreamConfig(options), wait);
}

/**
 * Makes sure MESH_TASKS and MESH_EVENTS exist with the subjects (and republish) of this release: created
 * when missing and allowed, else waited for; an outdated MESH_EVENTS updated when allowed, else waited for.
 */
export async function ensureMeshStreams(
  jsm: JetStreamManager,
  options: MeshResourceOptions = {},
  wait: ResourceWaitOptions = {},
): Promise<void> {
  for (const config of meshStreamConfigs(options)) {
    await existOrWait(
      jsm,
      { kind: 'stream', name: config.name, stream: config.name },
      () => jsm.streams.add(config),
      wait,
    );
    await updateOrWait(jsm, config, wait);
  }
}

export interface MeshBuckets {
  agents: KV;
  tools: KV;
  credentials: KV;
  tasks: KV;
  idempotency: KV;
  apiKeys: KV;
  mcpServers: KV;
  parkedTasks: KV;
  accountUsage: KV;
  schedules: KV;
  scheduleFirings: KV;
  threads: KV;
  webhooks: KV;
  webhookDeadLetters: KV;
  modelLimits: KV;
}
export type MeshBucketName = keyof MeshBuckets;

interface BucketSettings {
  history?: number;
  ttl?: number;
}

function meshBucketSettings(options: MeshResourceOptions): Record<MeshBucketName, [Bucket, BucketSettings]> {
  return {
    agents: [Buckets.AGENTS, { history: 5 }],
    tools: [Buckets.TOOLS, { history: 5 }],
    credentials: [Buckets.CREDENTIALS, {}],
    tasks: [Buckets.TASKS, { ttl: options.taskRetentionMs ?? DEFAULT_TASK_RETENTION_MS }],
    idempotency: [Buckets.IDEMPOTENCY, { ttl: options.idempotencyTtlMs ?? DAY_MS }],
    apiKeys: [Buckets.API_KEYS, {}],
    mcpServers: [Buckets.MCP_SERVERS, { history: 5 }],
    // No TTL: an entry lives until its task is queued again (or its approvals expire and it is).
    parkedTasks: [Buckets.PARKED_TASKS, {}],
    // A day's entry is read for caps during that UTC day only; two days outlive it across time zones.
    accountUsage: [Buckets.ACCOUNT_USAGE, { ttl: ACCOUNT_USAGE_TTL_MS }],
    // No TTL: a schedule lives until it is deleted.
    schedules: [Buckets.SCHEDULES, {}],
    // A firing's claim must outlive every fire time a gateway may still look at (the grace window, a
    // missed run's catch-up), and the entries are the schedule's run history: kept a month.
    scheduleFirings: [Buckets.SCHEDULE_FIRINGS, { ttl: SCHEDULE_FIRING_TTL_MS }],
    // No TTL: a thread lives until it is deleted (its entries age out of MESH_THREADS).
    threads: [Buckets.THREADS, {}],
    webhooks: [Buckets.WEBHOOKS, {}],
    // Kept until re-driven or dropped, like the task dead letters (bounded by their retention).
    webhookDeadLetters: [
      Buckets.WEBHOOK_DEAD_LETTERS,
      { ttl: options.deadLetterRetentionMs ?? DEFAULT_DEAD_LETTER_RETENTION_MS },
    ],
    // Minute counters are read for a minute; held slots are renewed far more often than this.
    modelLimits: [Buckets.MODEL_LIMITS, { ttl: MODEL_LIMITS_TTL_MS }],
  };
}

const ALL_MESH_BUCKETS: readonly MeshBucketName[] = [
  'agents',
  'tools',
  'credentials',
  'tasks',
  'idempotency',
  'apiKeys',
  'mcpServers',
  'parkedTasks',
  'accountUsage',
  'schedules',
  'scheduleFirings',
  'threads',
  'webhooks',
  'webhookDeadLetters',
  'modelLimits',
];

/**
 * Opens one KV bucket: created with `settings` when missing and this user may, waited for otherwise.
 * An existing bucket keeps its own settings.
 */
export async function openBucket(
  js: JetStreamClient,
  name: Bucket,
  settings: BucketSettings & { replicas?: number },
  wait: ResourceWaitOptions = {},
): Promise<KV> {
  const kvm = new Kvm(js);
  const options = {
    replicas: settings.replicas ?? 1,
    history: settings.history ?? 1,
    ...(settings.ttl ? { ttl: settings.ttl } : {}),
  };
  const jsm = await js.jetstreamManager();
  await existOrWait(
    jsm,
    { kind: 'bucket', name, stream: `KV_${name}` },
    () => kvm.create(name, options),
    wait,
  );
  // Exists now: this only reads the bucket's stream info (and so learns whether direct gets are on).
  return kvm.create(name, options);
}

/**
 * Opens the mesh's KV buckets — those named in `only`, or every one — creating each one that is
 * missing when this user may, waiting for it otherwise.
 */
export async function openMeshBuckets<K extends MeshBucketName = MeshBucketName>(
  js: JetStreamClient,
  options: MeshResourceOptions & { only?: readonly K[] } = {},
  wait: ResourceWaitOptions = {},
): Promise<Pick<MeshBuckets, K>> {
  const settings = meshBucketSettings(options);
  const names = (options.only ?? ALL_MESH_BUCKETS) as readonly K[];
  const opened = await Promise.all(
    names.map(async (key) => {
      const [bucket, extra] = settings[key];
      return [
        key,
        await openBucket(js, bucket, { ...extra, replicas: options.replicas ?? 1 }, wait),
      ] as const;
    }),
  );
  return Object.fromEntries(opened) as unknown as Pick<MeshBuckets, K>;
}

/** How long a native tool announcement lives without renewal, when the bucket is created with no TTL given. */
export const DEFAULT_NATIVE_PROVIDER_TTL_MS = 30_000;

/**
 * Opens `mesh_native_providers` (which executor provides which native tool class now), creating it with
 * `ttlMs` when missing (and allowed; waited for otherwise); an existing bucket keeps its own TTL.
 */
export async function openNativeProvidersBucket(
  js: JetStreamClient,
  options: { ttlMs?: number; replicas?: number } = {},
  wait: ResourceWaitOptions = {},
): Promise<KV> {
  return openBucket(
    js,
    Buckets.NATIVE_PROVIDERS,
    { history: 1, ttl: options.ttlMs ?? DEFAULT_NATIVE_PROVIDER_TTL_MS, replicas: options.replicas ?? 1 },
    wait,
  );
}

/** Age limits of the recall service's cache buckets when they are provisioned (entries expire on their own). */
export const DEFAULT_RECALL_TOOLS_TTL_MS = 10 * 60_000;
export const DEFAULT_RECALL_ACTIONS_TTL_MS = 30_000;

export interface ProvisionOptions extends MeshResourceOptions {
  nativeProviderTtlMs?: number;
  recallToolsTtlMs?: number;
  recallActionsTtlMs?: number;
}

export interface ProvisionReport {
  /** Streams and buckets this run created. */
  created: string[];
  /** Those that existed already (left as they are, but for `updated`). */
  existing: string[];
  /** Existing streams whose subjects and republish an earlier release had set, brought up to date. */
  updated: string[];
}

/**
 * Creates every stream and bucket of the mesh that does not exist yet — what the services would
 * otherwise create themselves — so their NATS users need no right to create any. Idempotent.
 */
export async function provisionMeshResources(
  js: JetStreamClient,
  options: ProvisionOptions = {},
): Promise<ProvisionReport> {
  const jsm = await js.jetstreamManager();
  const report: ProvisionReport = { created: [], existing: [], updated: [] };
  const replicas = options.replicas ?? 1;
  const provision = async (stream: string, label: string, create: () => Promise<unknown>): Promise<void> => {
    if (await streamExists(jsm, stream)) {
      report.existing.push(label);
      return;
    }
    await create();
    report.created.push(label);
  };
  for (const config of [
    ...meshStreamConfigs(options),
    deadLetterStreamConfig(options),
    taskAdvisoryStreamConfig(options),
    threadStreamConfig(options),
    webhookStreamConfig(options),
  ]) {
    await provision(config.name, `stream ${config.name}`, () => jsm.streams.add(config));
    if (await updateOrWait(jsm, config, {})) report.updated.push(`stream ${config.name}`);
  }
  const kvm = new Kvm(js);
  const buckets: Array<[Bucket, BucketSettings]> = [
    ...Object.values(meshBucketSettings(options)),
    [Buckets.NATIVE_PROVIDERS, { ttl: options.nativeProviderTtlMs ?? DEFAULT_NATIVE_PROVIDER_TTL_MS }],
    [Buckets.RECALL_TOOLS, { ttl: options.recallToolsTtlMs ?? DEFAULT_RECALL_TOOLS_TTL_MS }],
    [Buckets.RECALL_ACTIONS, { ttl: options.recallActionsTtlMs ?? DEFAULT_RECALL_ACTIONS_TTL_MS }],
  ];
  for (const [name, settings] of buckets) {
    await provision(`KV_${name}`, `bucket ${name}`, () =>
      kvm.create(name, {
        replicas,
        history: settings.history ?? 1,
        ...(settings.ttl ? { ttl: settings.ttl } : {}),
      }),
    );
  }
  return report;
}
