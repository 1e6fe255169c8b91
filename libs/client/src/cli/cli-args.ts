/**
 * The `agentmesh` command line, parsed with `node:util` parseArgs into one command object, or a
 * {@link UsageError} saying what was wrong. Connection settings come from flags, else from the
 * environment values the entry point passes in.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import {
  isManagementAction,
  MANAGEMENT_ACTIONS,
  MANAGEMENT_GROUPS,
  MANAGEMENT_USAGE,
  type ManagementAction,
} from './management-args.js';

export const DEFAULT_GATEWAY_URL = 'http://127.0.0.1:8080';

export const USAGE = `Usage:
  agentmesh submit --workflow <id> --message <text> [--user <id>] [--idempotency-key <key>]
                   [--trace-id <id>] [--thread <id> [--strategy <s>]]
                   [--follow [--nats <url> [--nats-user <user>]]] [--json]
  agentmesh events <trace_id> [--after <seq>] [--json]
  agentmesh status <trace_id>
  agentmesh cancel <trace_id> [--reason <text>]
  agentmesh approvals <trace_id> [--json]           tool calls the task waits on (and decided ones)
  agentmesh approve <trace_id> <call_id> [--comment <text>] [--json]
  agentmesh deny <trace_id> <call_id> [--comment <text>] [--json]   the model sees the comment
  agentmesh tail [--json]          every event of the account's tasks, live, until Ctrl-C

${MANAGEMENT_USAGE}
Connection (every command):
  --url <url>        gateway address (env AGENTMESH_URL, default ${DEFAULT_GATEWAY_URL})
  --api-key <key>    API key, sent as a bearer token (env AGENTMESH_API_KEY; prefer the env)
  --account <id>     account to act for, with an admin key (sent as x-account-id)
A gateway that cannot be reached, a refused key and every error the gateway answers are one line
\`error <CODE>: <message>\` on stderr (with --json: the error body {code, message, detail}).

Following over NATS (submit --follow --nats <url>): the task's events are read from JetStream from its
first event, so none is lost however early the task ends. NATS login: --nats-user (env
AGENTMESH_NATS_USER), password in env AGENTMESH_NATS_PASSWORD, --nats-inbox-prefix (default
_INBOX_<user>, the convention of infra/nats/accounts.conf).

Following a task (submit --follow, events): the answer streams to stdout, tool calls and errors go
to stderr; --json prints every event as one JSON line instead. Exit status: 0 when the task ends
done, 1 on an error event or a failed request, 2 on bad usage.
`;

/** What the entry point read from the environment. */
export interface CliEnvironment {
  url?: string;
  apiKey?: string;
  natsUser?: string;
  natsPassword?: string;
}

/** Where and as whom to follow a task over NATS. */
export interface NatsConnection {
  url: string;
  user?: string;
  password?: string;
  inboxPrefix?: string;
}

/** Where the gateway URL came from, so a hint can say what to change. */
export const UrlSource = {
  FLAG: '--url',
  ENV: 'AGENTMESH_URL',
  DEFAULT: 'default',
} as const;
export type UrlSource = (typeof UrlSource)[keyof typeof UrlSource];

export interface Connection {
  url: string;
  urlSource: UrlSource;
  apiKey?: string;
  account?: string;
}

export type CliCommand =
  | { name: 'help' }
  | {
      name: 'submit';
      connection: Connection;
      workflowId: string;
      message: string;
      userId: string;
      idempotencyKey?: string;
      traceId?: string;
      threadId?: string;
      threadStrategy?: string;
      follow: boolean;
      json: boolean;
      nats?: NatsConnection;
    }
  | { name: 'events'; connection: Connection; traceId: string; afterSeq: number; json: boolean }
  | { name: 'status'; connection: Connection; traceId: string }
  | { name: 'cancel'; connection: Connection; traceId: string; reason?: string }
  | { name: 'tail'; connection: Connection; json: boolean }
  | { name: 'approvals'; connection: Connection; traceId: string; json: boolean }
  | {
      name: 'decide';
      connection: Connection;
      traceId: string;
      callId: string;
      approve: boolean;
      comment?: string;
      json: boolean;
    }
  | ({ name: 'manage'; connection: Connection } & ManagementAction);

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The user a submission is made for when `--user` is not given. */
export const DEFAULT_USER_ID = 'cli';

type Options = NonNullable<ParseArgsConfig['options']>;

const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  account: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

const COMMAND_OPTIONS = {
  submit: {
    workflow: { type: 'string', short: 'w' },
    message: { type: 'string', short: 'm' },
    user: { type: 'string' },
    'idempotency-key': { type: 'string' },
    'trace-id': { type: 'string' },
    thread: { type: 'string' },
    strategy: { type: 'string' },
    follow: { type: 'boolean', short: 'f' },
    json: { type: 'boolean' },
    nats: { type: 'string' },
    'nats-user': { type: 'string' },
    'nats-inbox-prefix': { type: 'string' },
  },
  events: { after: { type: 'string' }, json: { type: 'boolean' } },
  status: {},
  cancel: { reason: { type: 'string' } },
  tail: { json: { type: 'boolean' } },
  approvals: { json: { type: 'boolean' } },
  approve: { comment: { type: 'string' }, json: { type: 'boolean' } },
  deny: { comment: { type: 'string' }, json: { type: 'boolean' } },
} as const satisfies Record<string, Options>;

type CommandName = keyof typeof COMMAND_OPTIONS;

const isCommandName = (name: string): name is CommandName => Object.hasOwn(COMMAND_OPTIONS, name);

export function parseCliArgs(argv: readonly string[], env: CliEnvironment): CliCommand {
  const { name, rest } = splitCommand(argv);
  if (name === undefined) throw new UsageError('no command given');
  if (name === 'help' || name === '--help' || name === '-h') return { name: 'help' };
  if (isManagementAction(name)) return parseManagementAction(name, rest, env);
  if (MANAGEMENT_GROUPS.has(name.split(' ')[0] ?? '')) {
    throw new UsageError(`unknown command ${JSON.stringify(name)}; see the Management commands below`);
  }
  if (!isCommandName(name)) throw new UsageError(`unknown command ${JSON.stringify(name)}`);

  let parsed;
  try {
    parsed = parseArgs({
      args: [...rest],
      options: { ...CONNECTION_OPTIONS, ...COMMAND_OPTIONS[name] },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  if (values.help === true) return { name: 'help' };
  const connection = connectionOf(values, env);

  if (name === 'submit') {
    if (parsed.positionals.length > 0) throw unexpected(parsed.positionals);
    const nats = natsOf(values, env);
    if (nats !== undefined && values.follow !== true)
      throw new UsageError('--nats follows the task: add --follow');
    return {
      name,
      connection,
      ...defined('nats', nats),
      workflowId: required(values, 'workflow'),
      message: required(values, 'message'),
      userId: optionalString(values, 'user') ?? DEFAULT_USER_ID,
      ...defined('idempotencyKey', optionalString(values, 'idempotency-key')),
      ...defined('traceId', optionalString(values, 'trace-id')),
      ...defined('threadId', optionalString(values, 'thread')),
      ...defined('threadStrategy', threadStrategyOf(values)),
      follow: values.follow === true,
      json: values.json === true,
    };
  }
  if (name === 'tail') {
    if (parsed.positionals.length > 0) throw unexpected(parsed.positionals);
    return { name, connection, json: values.json === true };
  }
  if (name === 'approve' || name === 'deny') {
    const [traceId, callId, ...extra] = parsed.positionals;
    if (traceId === undefined || traceId === '') throw new UsageError(`${name}: missing <trace_id>`);
    if (callId === undefined || callId === '') throw new UsageError(`${name}: missing <call_id>`);
    if (extra.length > 0) throw unexpected(extra);
    return {
      name: 'decide',
      connection,
      traceId,
      callId,
      approve: name === 'approve',
      ...defined('comment', optionalString(values, 'comment')),
      json: values.json === true,
    };
  }
  const traceId = onePositional(parsed.positionals, 'trace_id');
  if (name === 'approvals') return { name, connection, traceId, json: values.json === true };
  if (name === 'events') {
    return {
      name,
      connection,
      traceId,
      afterSeq: seqOf(optionalString(values, 'after')),
      json: values.json === true,
    };
  }
  if (name === 'status') return { name, connection, traceId };
  return { name, connection, traceId, ...defined('reason', optionalString(values, 'reason')) };
}

function threadStrategyOf(values: Record<string, string | boolean | undefined>): string | undefined {
  const strategy = optionalString(values, 'strategy');
  if (strategy === undefined) return undefined;
  if (values.thread === undefined) throw new UsageError('--strategy goes with --thread <id>');
  if (!['reject', 'enqueue', 'interrupt', 'rollback'].includes(strategy)) {
    throw new UsageError('--strategy must be reject, enqueue, interrupt or rollback');
  }
  return strategy;
}

function parseManagementAction(
  action: ManagementAction['action'],
  rest: readonly string[],
  env: CliEnvironment,
): CliCommand {
  const spec = MANAGEMENT_ACTIONS[action];
  let parsed;
  try {
    parsed = parseArgs({
      args: [...rest],
      options: { ...CONNECTION_OPTIONS, ...spec.options },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const values = parsed.values as Record<string, string | boolean | string[] | undefined>;
  if (values.help === true) return { name: 'help' };
  const connection = connectionOf(values as Record<string, string | boolean | undefined>, env);
  const names: readonly string[] = spec.positionals;
  if (parsed.positionals.length > names.length) throw unexpected(parsed.positionals.slice(names.length));
  const args: Record<string, string> = {};
  names.forEach((positional, index) => {
    const value = parsed.positionals[index];
    if (value === undefined || value === '') throw new UsageError(`${action}: missing <${positional}>`);
    args[positional] = value;
  });
  if ('needsAccount' in spec && spec.needsAccount && connection.account === undefined) {
    throw new UsageError(
      `${action} needs --account <id>: the account whose ${action.split(' ')[0]} to manage`,
    );
  }
  for (const [option, value] of Object.entries(values)) {
    if (typeof value === 'string' && value.trim() === '') throw new UsageError(`--${option} needs a value`);
  }
  return { name: 'manage', connection, action, args, values, json: values.json === true };
}

function natsOf(
  values: Record<string, string | boolean | undefined>,
  env: CliEnvironment,
): NatsConnection | undefined {
  const url = optionalString(values, 'nats');
  if (url === undefined) {
    for (const option of ['nats-user', 'nats-inbox-prefix']) {
      if (values[option] !== undefined) throw new UsageError(`--${option} goes with --nats <url>`);
    }
    return undefined;
  }
  if (!/^(nats|tls|wss?):\/\//.test(url) && url.includes('://')) {
    throw new UsageError(`--nats must be a NATS URL (nats://host:port), got ${url}`);
  }
  const user = optionalString(values, 'nats-user') ?? nonEmpty(env.natsUser);
  const inboxPrefix =
    optionalString(values, 'nats-inbox-prefix') ??
    (user === undefined ? undefined : `_INBOX_${user.replace(/[^A-Za-z0-9_]/g, '_')}`);
  return {
    url,
    ...defined('user', user),
    ...defined('password', nonEmpty(env.natsPassword)),
    ...defined('inboxPrefix', inboxPrefix),
  };
}

function connectionOf(values: Record<string, string | boolean | undefined>, env: CliEnvironment): Connection {
  const flag = optionalString(values, 'url');
  const fromEnv = nonEmpty(env.url);
  const url = flag ?? fromEnv ?? DEFAULT_GATEWAY_URL;
  const urlSource =
    flag !== undefined ? UrlSource.FLAG : fromEnv !== undefined ? UrlSource.ENV : UrlSource.DEFAULT;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError('--url / AGENTMESH_URL is not a URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new UsageError(`--url / AGENTMESH_URL must be http(s), got ${parsed.protocol}`);
  }
  return {
    url,
    urlSource,
    ...defined('apiKey', optionalString(values, 'api-key') ?? nonEmpty(env.apiKey)),
    ...defined('account', optionalString(values, 'account')),
  };
}

function required(values: Record<string, string | boolean | undefined>, option: string): string {
  const value = optionalString(values, option);
  if (value === undefined) throw new UsageError(`--${option} is required`);
  return value;
}

function optionalString(
  values: Record<string, string | boolean | undefined>,
  option: string,
): string | undefined {
  const value = values[option];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${option} needs a value`);
  return value;
}

function onePositional(positionals: readonly string[], what: string): string {
  const [first, ...extra] = positionals;
  if (first === undefined) throw new UsageError(`missing <${what}>`);
  if (extra.length > 0) throw unexpected(extra);
  return first;
}

function seqOf(raw: string | undefined): number {
  if (raw === undefined) return 0;
  if (!/^\d{1,15}$/.test(raw))
    throw new UsageError(`--after must be an event seq (a non-negative integer), got ${raw}`);
  return Number(raw);
}

const unexpected = (extra: readonly string[]): UsageError =>
  new UsageError(`unexpected argument ${JSON.stringify(extra[0])}`);

const nonEmpty = (value: string | undefined): string | undefined =>
  value === undefined || value === '' ? undefined : value;

function defined<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * The command word and every other argument. Connection options may come before the command
 * (`agentmesh --url … submit …`), as people write them; they are parsed with the command's own.
 */
function splitCommand(argv: readonly string[]): { name: string | undefined; rest: string[] } {
  const leading: string[] = [];
  let i = 0;
  while (i < argv.length) {
    const arg = argv[i] as string;
    if (!arg.startsWith('-') || arg === '--help' || arg === '-h') break;
    const option = arg.replace(/^--/, '').split('=')[0] ?? '';
    if (!Object.hasOwn(CONNECTION_OPTIONS, option)) {
      throw new UsageError(`${arg} cannot come before the command; only --url, --api-key and --account can`);
    }
    const takesValue = !arg.includes('=');
    leading.push(...argv.slice(i, i + (takesValue ? 2 : 1)));
    i += takesValue ? 2 : 1;
  }
  const name = argv[i];
  // A management command is a group and an action: `agents list`.
  if (name !== undefined && MANAGEMENT_GROUPS.has(name)) {
    const action = argv[i + 1];
    if (action === undefined || action.startsWith('-')) {
      throw new UsageError(`${name} needs an action (see the Management commands below)`);
    }
    return { name: `${name} ${action}`, rest: [...leading, ...argv.slice(i + 2)] };
  }
  return { name, rest: [...leading, ...argv.slice(i + 1)] };
}
