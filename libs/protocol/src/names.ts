// Every NATS name of the mesh in one place: subjects, streams, durable consumers, the recall micro service and
// the KV buckets. Builders validate their inputs and throw, because a bad token here is a bug upstream of them
// (boundary schemas use AccountId and TraceId first), and a `.`/`*`/`>` smuggled into a subject would widen it.
import { z } from 'zod';
import { ErrorCode } from './errors.js';
import { NATIVE_CLASS_NAME_PATTERN } from './native-providers.js';
import { isTraceId, type TraceId } from './trace-id.js';

const ACCOUNT_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

/** An account id is one NATS subject token, so NATS permissions can confine a tenant to its own subjects. */
export const AccountId = z
  .string()
  .regex(ACCOUNT_ID_PATTERN, 'account id must be 1-128 characters of A-Z, a-z, 0-9, "_" or "-"');
export type AccountId = z.infer<typeof AccountId>;

export function isAccountId(value: unknown): value is AccountId {
  return typeof value === 'string' && ACCOUNT_ID_PATTERN.test(value);
}

/** Thrown by the subject builders when handed a value that is not a legal token for its place. */
export class InvalidSubjectTokenError extends Error {
  readonly code = ErrorCode.INVALID_REQUEST;
  readonly retryable = false;

  constructor(
    readonly what: 'account id' | 'trace id' | 'thread id' | 'native class name',
    readonly value: unknown,
  ) {
    super(`not a valid ${what} for a NATS subject: ${JSON.stringify(String(value).slice(0, 80))}`);
    this.name = 'InvalidSubjectTokenError';
  }
}

export const Subjects = {
  /**
   * Request/reply ingress for trusted service users: the account is named by the `x-account-id` header
   * (or an API key), so NATS permissions must grant this subject to trusted internal services only.
   */
  GATEWAY_SUBMIT: 'mesh.gateway.submit',
  /**
   * `mesh.gateway.submit.<account>`: request/reply ingress for account-confined users. The account is the
   * subject's last token, so a NATS user allowed to publish only to its own account's subject can submit
   * for nothing else, whatever its headers say.
   */
  GATEWAY_SUBMIT_PREFIX: 'mesh.gateway.submit',
  /** Request/reply endpoint of the recall micro service. */
  RECALL_ACTIONS: 'mesh.recall.actions',
  TASKS_RECEIVED_PREFIX: 'mesh.tasks.received',
  TASKS_ASSEMBLED_PREFIX: 'mesh.tasks.assembled',
  /**
   * `mesh.eventlog.<account>.<trace_id>`: where executors (and the assembler) publish a task's events,
   * captured by MESH_EVENTS. Nobody but the writers may publish here and no tenant may subscribe: a core
   * subscriber here would also see publishes JetStream refused (the fence against a stale attempt).
   */
  EVENT_LOG_PREFIX: 'mesh.eventlog',
  /**
   * `mesh.events.<account>.<trace_id>`: the subject clients follow. Only the server publishes here:
   * MESH_EVENTS republishes each event once it is stored, in stream order, so a follower sees stored
   * events only. Every user is denied publishing here.
   */
  EVENTS_PREFIX: 'mesh.events',
  CANCEL_PREFIX: 'mesh.control.cancel',
  DEAD_LETTERS_PREFIX: 'mesh.dead',
  /**
   * `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<consumer>`: JetStream's advisory that a message
   * was delivered max_deliver times and never acknowledged (nats-server sends it on its next redelivery try).
   */
  MAX_DELIVERIES_ADVISORY_PREFIX: '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES',
  /** `mesh.webhooks.deliver.<account>`: one webhook delivery to make (stream MESH_WEBHOOKS). */
  WEBHOOK_DELIVERIES_PREFIX: 'mesh.webhooks.deliver',
} as const;

export const Streams = {
  TASKS: { name: 'MESH_TASKS', subjects: ['mesh.tasks.>'] },
  /**
   * A task's stored events, captured from `mesh.eventlog.>` and republished, once stored, onto
   * `mesh.events.>` (same account and trace id tokens): the followed subjects carry stored events only.
   */
  EVENTS: {
    name: 'MESH_EVENTS',
    subjects: ['mesh.eventlog.>'],
    republish: { src: 'mesh.eventlog.>', dest: 'mesh.events.>' },
  },
  /** Tasks that ran out of deliveries, one message per task (`mesh.dead.<account>.<trace_id>`). */
  DEAD_LETTERS: { name: 'MESH_DEAD_LETTERS', subjects: ['mesh.dead.>'] },
  /** Threads' entries (turns, compactions), in order, on `mesh.threads.<account>.<thread_id>`. */
  THREADS: { name: 'MESH_THREADS', subjects: ['mesh.threads.>'] },
  /** Webhook deliveries to make (work queue; `Nats-Msg-Id` = `<webhook id>.<attempt>`). */
  WEBHOOKS: { name: 'MESH_WEBHOOKS', subjects: ['mesh.webhooks.>'] },
  /**
   * JetStream's MAX_DELIVERIES advisories of MESH_TASKS' consumers, stored as nats-server sends them (work
   * queue): a task whose last delivery died is dead-lettered even when no executor was connected to hear
   * the advisory, and a task left to a live attempt stays watched when the executor watching it dies.
   */
  TASK_ADVISORIES: {
    name: 'MESH_TASK_ADVISORIES',
    subjects: ['$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MESH_TASKS.*'],
  },
} as const;

/** The executors' durable consumer of MESH_TASK_ADVISORIES, shared by every instance (one handles each advisory). */
export const AdvisoryConsumers = {
  DEAD_LETTERS: { durable_name: 'dead-letters', stream: 'MESH_TASK_ADVISORIES' },
} as const;

/** Durable consumers; each one reads one stage of MESH_TASKS and is shared by all instances of its service. */
export const Consumers = {
  ASSEMBLER: { durable_name: 'assembler', stream: 'MESH_TASKS', filter_subject: 'mesh.tasks.received.*' },
  EXECUTOR: { durable_name: 'executor', stream: 'MESH_TASKS', filter_subject: 'mesh.tasks.assembled.*' },
} as const;

/**
 * The gateways' webhook consumers: `webhook-status` reads every task status write (the KV stream of
 * `mesh_tasks`) once the deployment has a webhook endpoint, and queues deliveries; `webhooks` delivers them.
 * Each is shared by every gateway instance.
 */
export const WebhookConsumers = {
  STATUS: { durable_name: 'webhook-status', stream: 'KV_mesh_tasks', filter_subject: '$KV.mesh_tasks.>' },
  DELIVERIES: {
    durable_name: 'webhooks',
    stream: 'MESH_WEBHOOKS',
    filter_subject: 'mesh.webhooks.deliver.*',
  },
} as const;

export const Services = {
  RECALL: { name: 'recall', subject: 'mesh.recall.actions' },
} as const;

/** Buckets of earlier releases, read once to carry their entries over; nothing writes them any more. */
export const LegacyBuckets = {
  /** What `mesh_tools` was called; the gateway copies its entries over at start. */
  PLUGINS: 'mesh_plugins',
} as const;

export const Buckets = {
  AGENTS: 'mesh_agents',
  /** Tool definitions of every kind (the registry was first called plugins; see LegacyBuckets). */
  TOOLS: 'mesh_tools',
  CREDENTIALS: 'mesh_credentials',
  TASKS: 'mesh_tasks',
  /** `<account>.<sha256(idempotency key)>` → trace_id; created atomically, expires after a day. */
  IDEMPOTENCY: 'mesh_idempotency',
  /** `<sha256(api key)>` → the account the key belongs to; keys are never stored in clear. */
  API_KEYS: 'mesh_api_keys',
  /** Recall's cache of tool details and their converted schemas, per (box_id, tool_id); shared by instances. */
  RECALL_TOOLS: 'mesh_recall_tools',
  /** Recall's short-lived cache of action-query answers, per (account, kn_id, at_id, identities). */
  RECALL_ACTIONS: 'mesh_recall_actions',
  /**
   * `<class_name>.<executor instance>` → which running executor provides a native tool; entries expire
   * after a TTL unless the executor renews them, and are deleted when it stops.
   */
  NATIVE_PROVIDERS: 'mesh_native_providers',
  /** MCP server definitions, owned like agents and tools (`acct.<account>.<name>` / `shared.<name>`). */
  MCP_SERVERS: 'mesh_mcp_servers',
  /** `<account>.<trace_id>` → a task parked for approval (ParkedTask); deleted once it is queued again. */
  PARKED_TASKS: 'mesh_parked_tasks',
  /** `<account>.<YYYY-MM-DD>` (UTC) → the account's token and cost use that day (AccountDailyUsage). */
  ACCOUNT_USAGE: 'mesh_account_usage',
  /** `<account>.<schedule id>` → a scheduled run (Schedule). */
  SCHEDULES: 'mesh_schedules',
  /**
   * `<account>.<schedule id>.<fire key>` → one firing (ScheduleFiring): created atomically, so of several
   * gateways exactly one claims a fire time; kept for a while as the schedule's run history.
   */
  SCHEDULE_FIRINGS: 'mesh_schedule_firings',
  /** `<account>.<thread_id>` → a thread's record (ThreadRecord): metadata, strategy, active and queued runs. */
  THREADS: 'mesh_threads',
  /** `<account>.<endpoint id>` → a webhook endpoint, its signing secret encrypted at rest. */
  WEBHOOKS: 'mesh_webhooks',
  /** `<account>.<webhook id>` → a webhook delivery out of attempts (WebhookDeadLetter), until re-driven or dropped. */
  WEBHOOK_DEAD_LETTERS: 'mesh_webhook_dead_letters',
  /**
   * Shared limits of model keys, by a hash of the key (never the key): `<key hash>.slot.<n>` → a held
   * concurrency slot (holder, lease expiry; compare-and-set), `<key hash>.rpm.<minute>` and
   * `<key hash>.tpm.<minute>` → requests and tokens of that minute. Entries expire after 5 minutes.
   */
  MODEL_LIMITS: 'mesh_model_limits',
} as const;
export type Bucket = (typeof Buckets)[keyof typeof Buckets];

function account(value: string): AccountId {
  if (!isAccountId(value)) throw new InvalidSubjectTokenError('account id', value);
  return value;
}

function trace(value: string): TraceId {
  if (!isTraceId(value)) throw new InvalidSubjectTokenError('trace id', value);
  return value;
}

/** `mesh.tasks.received.<account>`: written by the gateway (Nats-Msg-Id = trace_id), read by the assembler. */
export function taskReceivedSubject(accountId: string): string {
  return `${Subjects.TASKS_RECEIVED_PREFIX}.${account(accountId)}`;
}

/**
 * The subject token naming a set of native tool classes: the class names sorted and joined by `-` (which a
 * class name cannot hold, so the token names one set only); undefined for the empty set.
 */
export function nativeClassesToken(classNames: Iterable<string>): string | undefined {
  const sorted = [...new Set(classNames)].sort();
  for (const name of sorted) {
    if (!NATIVE_CLASS_NAME_PATTERN.test(name)) throw new InvalidSubjectTokenError('native class name', name);
  }
  return sorted.length === 0 ? undefined : sorted.join('-');
}

/**
 * `mesh.tasks.assembled.<account>`, or `mesh.tasks.assembled.<account>.<native classes>` for a task whose
 * tools need native classes (see `nativeClassesToken`): written by the assembler, read by the executors,
 * each through the consumers of the class sets it can serve (`executorConsumer`).
 */
export function taskAssembledSubject(accountId: string, nativeClasses: Iterable<string> = []): string {
  const token = nativeClassesToken(nativeClasses);
  const base = `${Subjects.TASKS_ASSEMBLED_PREFIX}.${account(accountId)}`;
  return token === undefined ? base : `${base}.${token}`;
}

/**
 * The durable consumer that delivers the tasks needing exactly `nativeClasses` (every account): the
 * shared `executor` for tasks needing none, `executor-<native classes>` otherwise. Their filters do not
 * overlap (a work-queue stream requires it), so an executor reads the consumer of every subset of the
 * classes it has.
 */
export function executorConsumer(nativeClasses: Iterable<string> = []): {
  durable_name: string;
  stream: string;
  filter_subject: string;
} {
  const token = nativeClassesToken(nativeClasses);
  if (token === undefined) return { ...Consumers.EXECUTOR };
  return {
    durable_name: `${Consumers.EXECUTOR.durable_name}-${token}`,
    stream: Consumers.EXECUTOR.stream,
    filter_subject: `${Consumers.EXECUTOR.filter_subject}.${token}`,
  };
}

/**
 * `mesh.events.<account>.<trace_id>`: the subject a client follows a task on (the `events_subject` of a
 * submission): every stored event of the task, in order, once, republished by MESH_EVENTS. Stream reads
 * use {@link taskEventLogSubject}.
 */
export function taskEventsSubject(accountId: string, traceId: string): string {
  return `${Subjects.EVENTS_PREFIX}.${account(accountId)}.${trace(traceId)}`;
}

/**
 * `mesh.eventlog.<account>.<trace_id>`: where a task's events are published and stored (MESH_EVENTS);
 * what every reader of the stream filters on (replay, the last event, a task's log).
 */
export function taskEventLogSubject(accountId: string, traceId: string): string {
  return `${Subjects.EVENT_LOG_PREFIX}.${account(accountId)}.${trace(traceId)}`;
}

/**
 * `mesh.control.cancel.<account>.<trace_id>`: core NATS cancellation broadcast for one task. Trace ids are
 * scoped by account (two accounts may use the same one), so the account is part of the task's name.
 */
export function cancelSubject(accountId: string, traceId: string): string {
  return `${Subjects.CANCEL_PREFIX}.${account(accountId)}.${trace(traceId)}`;
}

/** `mesh.gateway.submit.<account>`: the NATS ingress of one account (see Subjects.GATEWAY_SUBMIT_PREFIX). */
export function accountSubmitSubject(accountId: string): string {
  return `${Subjects.GATEWAY_SUBMIT_PREFIX}.${account(accountId)}`;
}

/** The account of an account-confined ingress subject; undefined for the trusted subject or anything else. */
export function parseSubmitSubject(subject: string): { accountId: AccountId } | undefined {
  const [mesh, gateway, submit, accountId, ...rest] = subject.split('.');
  if (mesh !== 'mesh' || gateway !== 'gateway' || submit !== 'submit' || rest.length > 0) return undefined;
  return isAccountId(accountId) ? { accountId } : undefined;
}

/**
 * The key of a task in stores shared by every account (`mesh_tasks`, the task stream's Nats-Msg-Id):
 * `<account>.<trace_id>`, so one account can neither see nor claim another's trace id.
 */
export function taskKey(accountId: string, traceId: string): string {
  return `${account(accountId)}.${trace(traceId)}`;
}

/**
 * The Nats-Msg-Id of a task's received message published again after the queue lost it (re-drive `n`,
 * from 1): `<account>.<trace_id>:redrive-<n>`, outside the first publish's duplicate window.
 */
export function redrivenTaskMsgId(accountId: string, traceId: string, n: number): string {
  return `${taskKey(accountId, traceId)}:redrive-${n}`;
}

/** The re-drive number a received message's Nats-Msg-Id names for this task; undefined for a first publish. */
export function redriveOf(msgId: string | undefined, accountId: string, traceId: string): number | undefined {
  const prefix = `${taskKey(accountId, traceId)}:redrive-`;
  if (msgId === undefined || !msgId.startsWith(prefix)) return undefined;
  const n = msgId.slice(prefix.length);
  return /^[1-9]\d{0,2}$/.test(n) ? Number(n) : undefined;
}

/** `mesh.dead.<account>.<trace_id>`: the dead letter of one task (the stream keeps the last per subject). */
export function deadLetterSubject(accountId: string, traceId: string): string {
  return `${Subjects.DEAD_LETTERS_PREFIX}.${account(accountId)}.${trace(traceId)}`;
}

/** `mesh.webhooks.deliver.<account>`: the webhook deliveries of one account. */
export function webhookDeliverySubject(accountId: string): string {
  return `${Subjects.WEBHOOK_DELIVERIES_PREFIX}.${account(accountId)}`;
}

/** Every dead letter of one account, or of every account. */
export function deadLettersWildcard(accountId?: string): string {
  return accountId === undefined
    ? `${Subjects.DEAD_LETTERS_PREFIX}.*.*`
    : `${Subjects.DEAD_LETTERS_PREFIX}.${account(accountId)}.*`;
}

/** The MAX_DELIVERIES advisories of every consumer of MESH_TASKS. */
export function taskMaxDeliveriesAdvisories(): string {
  return `${Subjects.MAX_DELIVERIES_ADVISORY_PREFIX}.${Streams.TASKS.name}.*`;
}

/** Core subscription covering every (stored, republished) event of every task of one account. */
export function accountEventsWildcard(accountId: string): string {
  return `${Subjects.EVENTS_PREFIX}.${account(accountId)}.*`;
}

/** Stream filter covering the stored events of every task of one account. */
export function accountEventLogWildcard(accountId: string): string {
  return `${Subjects.EVENT_LOG_PREFIX}.${account(accountId)}.*`;
}

export const Wildcards = {
  ALL_RECEIVED_TASKS: 'mesh.tasks.received.*',
  ALL_ASSEMBLED_TASKS: 'mesh.tasks.assembled.*',
  /** Assembled tasks that need native tool classes (`mesh.tasks.assembled.<account>.<native classes>`). */
  ALL_ROUTED_ASSEMBLED_TASKS: 'mesh.tasks.assembled.*.*',
  /** Every followed (republished) event subject. */
  ALL_EVENTS: 'mesh.events.>',
  /** Every stored event subject: the filter of a reader of all of MESH_EVENTS. */
  ALL_EVENT_LOG: 'mesh.eventlog.>',
  ALL_CANCELS: 'mesh.control.cancel.*.*',
  ALL_ACCOUNT_SUBMITS: 'mesh.gateway.submit.*',
} as const;

export type TaskStage = 'received' | 'assembled';

/**
 * The stage and account of a MESH_TASKS subject, and for an assembled task the native classes its subject
 * names (only when it names some), or undefined if it is not one.
 */
export function parseTaskSubject(
  subject: string,
): { stage: TaskStage; accountId: AccountId; nativeClasses?: string[] } | undefined {
  const [mesh, tasks, stage, accountId, classes, ...rest] = subject.split('.');
  if (mesh !== 'mesh' || tasks !== 'tasks' || rest.length > 0 || accountId === undefined) return undefined;
  if (stage !== 'received' && stage !== 'assembled') return undefined;
  if (!isAccountId(accountId)) return undefined;
  if (classes === undefined) return { stage, accountId };
  const nativeClasses = classes.split('-');
  if (stage !== 'assembled' || !nativeClasses.every((name) => NATIVE_CLASS_NAME_PATTERN.test(name)))
    return undefined;
  return { stage, accountId, nativeClasses };
}

/** The account and trace id of a cancel subject, or undefined if it is not one. */
export function parseCancelSubject(subject: string): { accountId: AccountId; traceId: TraceId } | undefined {
  const [mesh, control, cancel, accountId, traceId, ...rest] = subject.split('.');
  if (mesh !== 'mesh' || control !== 'control' || cancel !== 'cancel' || rest.length > 0) return undefined;
  return isAccountId(accountId) && isTraceId(traceId) ? { accountId, traceId } : undefined;
}

function parseTaskSubjectUnder(
  prefix: string,
  subject: string,
): { accountId: AccountId; traceId: TraceId } | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const [accountId, traceId, ...rest] = subject.slice(prefix.length + 1).split('.');
  if (rest.length > 0) return undefined;
  return isAccountId(accountId) && isTraceId(traceId) ? { accountId, traceId } : undefined;
}

/** The account and trace id of a followed events subject (`mesh.events.…`), or undefined if it is not one. */
export function parseEventsSubject(subject: string): { accountId: AccountId; traceId: TraceId } | undefined {
  return parseTaskSubjectUnder(Subjects.EVENTS_PREFIX, subject);
}

/**
 * The account and trace id of a task status write as the KV stream of `mesh_tasks` stores it
 * (`$KV.mesh_tasks.<account>.<trace_id>`), or undefined if it is not one.
 */
export function parseTaskStatusSubject(
  subject: string,
): { accountId: AccountId; traceId: TraceId } | undefined {
  return parseTaskSubjectUnder(`$KV.${Buckets.TASKS}`, subject);
}

/** The account and trace id of a stored events subject (`mesh.eventlog.…`), or undefined if it is not one. */
export function parseEventLogSubject(
  subject: string,
): { accountId: AccountId; traceId: TraceId } | undefined {
  return parseTaskSubjectUnder(Subjects.EVENT_LOG_PREFIX, subject);
}
