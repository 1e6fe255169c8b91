/**
 * The management commands of `agentmesh` (`agents`, `tools`, `credentials`, `keys`, `dead-letters`,
 * `schedules`, `webhooks`, and `threads`, which acts for the caller's account): each a group word
 * and an action (`agents list`), with its positional arguments and options. Parsed into one
 * {@link ManagementAction}; the connection options are the CLI's own (see cli-args.ts).
 */
import type { ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

interface ActionSpec {
  /** Names of the positional arguments, in order; all required. */
  positionals: readonly string[];
  options: Options;
  /** The action acts on the account named with --account (credentials, API keys). */
  needsAccount?: boolean;
}

const JSON_OPTION = { json: { type: 'boolean' } } as const satisfies Options;

export const MANAGEMENT_ACTIONS = {
  'agents list': { positionals: [], options: JSON_OPTION },
  'agents get': { positionals: ['workflow_id'], options: JSON_OPTION },
  'agents put': { positionals: ['file'], options: JSON_OPTION },
  'agents delete': { positionals: ['workflow_id'], options: JSON_OPTION },
  'agents versions': { positionals: ['workflow_id'], options: JSON_OPTION },
  'agents show': { positionals: ['workflow_ref'], options: JSON_OPTION },
  'agents diff': { positionals: ['workflow_id', 'from', 'to'], options: JSON_OPTION },
  'agents rollback': { positionals: ['workflow_id', 'version'], options: JSON_OPTION },
  'tools list': {
    positionals: [],
    options: { ...JSON_OPTION, tag: { type: 'string' }, namespace: { type: 'string' } },
  },
  'tools get': { positionals: ['name'], options: JSON_OPTION },
  'tools put': { positionals: ['file'], options: JSON_OPTION },
  'tools delete': { positionals: ['name'], options: JSON_OPTION },
  'tools import': {
    positionals: ['file_or_url'],
    options: {
      ...JSON_OPTION,
      'base-url': { type: 'string' },
      operation: { type: 'string', multiple: true },
      'name-prefix': { type: 'string' },
      'credential-prefix': { type: 'string' },
      'dry-run': { type: 'boolean' },
    },
  },
  'credentials list': {
    positionals: [],
    options: { ...JSON_OPTION, user: { type: 'string' } },
    needsAccount: true,
  },
  'credentials put': {
    positionals: ['name'],
    options: { ...JSON_OPTION, user: { type: 'string' } },
    needsAccount: true,
  },
  'credentials delete': {
    positionals: ['name'],
    options: { ...JSON_OPTION, user: { type: 'string' } },
    needsAccount: true,
  },
  'keys create': {
    positionals: [],
    options: { ...JSON_OPTION, type: { type: 'string' }, label: { type: 'string' } },
    needsAccount: true,
  },
  'keys revoke': { positionals: [], options: JSON_OPTION, needsAccount: true },
  'dead-letters list': {
    positionals: [],
    options: { ...JSON_OPTION, workflow: { type: 'string' }, limit: { type: 'string' } },
  },
  'dead-letters show': { positionals: ['trace_id'], options: JSON_OPTION },
  'dead-letters redrive': { positionals: ['trace_id'], options: JSON_OPTION },
  'dead-letters drop': { positionals: ['trace_id'], options: JSON_OPTION },
  'schedules list': { positionals: [], options: JSON_OPTION },
  'schedules show': {
    positionals: ['schedule_id'],
    options: { ...JSON_OPTION, next: { type: 'string' }, runs: { type: 'string' } },
  },
  'schedules create': {
    positionals: [],
    options: {
      ...JSON_OPTION,
      file: { type: 'string' },
      cron: { type: 'string' },
      tz: { type: 'string' },
      every: { type: 'string' },
      agent: { type: 'string' },
      user: { type: 'string' },
      message: { type: 'string' },
      missed: { type: 'string' },
      name: { type: 'string' },
      thread: { type: 'string' },
      paused: { type: 'boolean' },
    },
  },
  'schedules pause': { positionals: ['schedule_id'], options: JSON_OPTION },
  'schedules resume': { positionals: ['schedule_id'], options: JSON_OPTION },
  'schedules delete': { positionals: ['schedule_id'], options: JSON_OPTION },
  'schedules run': {
    positionals: ['schedule_id'],
    options: { ...JSON_OPTION, 'idempotency-key': { type: 'string' } },
  },
  'threads list': {
    positionals: [],
    options: { ...JSON_OPTION, limit: { type: 'string' }, before: { type: 'string' } },
  },
  'threads show': { positionals: ['thread_id'], options: JSON_OPTION },
  'threads create': {
    positionals: [],
    options: {
      ...JSON_OPTION,
      id: { type: 'string' },
      strategy: { type: 'string' },
      metadata: { type: 'string' },
      'max-history-tokens': { type: 'string' },
      compaction: { type: 'string' },
      'max-age-seconds': { type: 'string' },
      'max-turns': { type: 'string' },
    },
  },
  'threads delete': { positionals: ['thread_id'], options: JSON_OPTION },
  'webhooks create': {
    positionals: ['url'],
    options: { ...JSON_OPTION, event: { type: 'string', multiple: true }, description: { type: 'string' } },
    needsAccount: true,
  },
  'webhooks list': { positionals: [], options: JSON_OPTION, needsAccount: true },
  'webhooks show': { positionals: ['id'], options: JSON_OPTION, needsAccount: true },
  'webhooks delete': { positionals: ['id'], options: JSON_OPTION, needsAccount: true },
  'webhooks rotate': {
    positionals: ['id'],
    options: { ...JSON_OPTION, 'previous-valid-for': { type: 'string' } },
    needsAccount: true,
  },
  'webhooks test': { positionals: ['id'], options: JSON_OPTION, needsAccount: true },
  'webhooks dead-letters': { positionals: [], options: JSON_OPTION },
  'webhooks redrive': { positionals: ['webhook_id'], options: JSON_OPTION, needsAccount: true },
  'webhooks drop': { positionals: ['webhook_id'], options: JSON_OPTION, needsAccount: true },
} as const satisfies Record<string, ActionSpec>;

export type ManagementActionName = keyof typeof MANAGEMENT_ACTIONS;

export const MANAGEMENT_GROUPS = new Set(
  Object.keys(MANAGEMENT_ACTIONS).map((name) => name.split(' ')[0] as string),
);

export const isManagementAction = (name: string): name is ManagementActionName =>
  Object.hasOwn(MANAGEMENT_ACTIONS, name);

/** One management command, its positionals by name and its option values as parsed. */
export interface ManagementAction {
  action: ManagementActionName;
  args: Readonly<Record<string, string>>;
  values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  json: boolean;
}

export const MANAGEMENT_USAGE = `Management (an admin key; --account <id> to manage that account, none for the shared catalogue):
  agentmesh agents list | get <workflow_id> | put <file.json> | delete <workflow_id>
  agentmesh agents versions <workflow_id> | show <workflow_id>[@<version>]
  agentmesh agents diff <workflow_id> <from> <to> | rollback <workflow_id> <version>
  agentmesh tools list [--tag <t>] [--namespace <ns>] | get <name> | put <file.json> | delete <name>
  agentmesh tools import <file|url> [--base-url <url>] [--operation <id>]... [--name-prefix <p>]
                         [--credential-prefix <p>] [--dry-run]
  agentmesh --account <id> credentials list [--user <id>]
  agentmesh --account <id> credentials put <name> [--user <id>]    (the value is read from stdin)
  agentmesh --account <id> credentials delete <name> [--user <id>]
                         without --user: the account-wide set, serving every user of the account;
                         with --user: that user's own (a run uses the user's own first, then the account's)
  agentmesh --account <id> keys create [--type <account type>] [--label <text>]  (prints the new key once)
  agentmesh --account <id> keys revoke                               (the key is read from stdin)
  agentmesh dead-letters list [--workflow <id>] [--limit <n>] | show <trace_id>
  agentmesh dead-letters redrive <trace_id>   (submits the task again as a new task; prints its trace_id)
  agentmesh dead-letters drop <trace_id>
Scheduled runs (an account API key, or an admin key with --account <id>):
  agentmesh schedules list | show <id> [--next <n>] [--runs <n>] | pause <id> | resume <id> | delete <id>
  agentmesh schedules create --agent <workflow_id[@version]> --user <id> --message <text>
                         (--cron "<5 fields>" [--tz <IANA zone, default UTC>] | --every <seconds>)
                         [--missed skip|run_once] [--name <text>] [--thread <thread_id>] [--paused]
  agentmesh schedules create --file <schedule.json>   (the body of POST /v1/schedules; "-" reads stdin)
  agentmesh schedules run <id> [--idempotency-key <k>]   (fires it now; prints the task's trace_id)
Threads (an API key acts for its own account):
  agentmesh threads list [--limit <n>] [--before <cursor>] | show <thread_id> | delete <thread_id>
  agentmesh threads create [--id <id>] [--strategy reject|enqueue|interrupt|rollback]
                           [--metadata <json>] [--max-history-tokens <n> [--compaction cut|summarise]]
                           [--max-age-seconds <n>] [--max-turns <n>]   (retention: older entries are dropped)
  agentmesh submit --thread <id> [--strategy <s>] ...   runs in the thread, with its history
  agentmesh --account <id> webhooks create <url> [--event <type>]... [--description <text>]
                         (prints the signing secret once; events: task.completed, task.failed,
                         task.cancelled, task.approval_requested; all when none is given)
  agentmesh --account <id> webhooks list | show <id> | delete <id> | test <id>
  agentmesh --account <id> webhooks rotate <id> [--previous-valid-for <seconds>]  (prints the new secret once)
  agentmesh [--account <id>] webhooks dead-letters
  agentmesh --account <id> webhooks redrive <webhook_id> | drop <webhook_id>
  A file argument of "-" reads stdin. --json (every management command) prints the gateway's answer as
  JSON, and an error as its body {code, message, detail} on stderr.
`;
