/**
 * Runs one management command ({@link ManagementAction}) with the {@link ManagementClient} and prints
 * its outcome: short human lines on stdout (notes on stderr), or the gateway's answer as JSON with
 * `--json`. Secrets are read from stdin and never printed, except a key the gateway generated, which
 * `keys create` prints alone on stdout this once (so `KEY=$(agentmesh keys create)` keeps it).
 */
import {
  agentModels,
  parseAgentVersion,
  WorkflowRef,
  type AgentDiffEntry,
  type AgentVersionSummary,
  type CreateScheduleRequestInput,
  type DeadLetterView,
  type TaskWebhookEvent,
  type WebhookEndpointView,
  type ScheduleListItem,
  type ScopedAgent,
  type ScopedTool,
  type WorkflowPin,
} from '@agentmesh/protocol';
import type { ManagementClient } from '../management-client.js';
import { CliInputError, readJsonSource, readSecret, readSource, type CliInputSources } from './cli-input.js';
import type { CliStreams } from './event-printer.js';
import type { ManagementAction } from './management-args.js';

export interface ManagementRunContext extends CliStreams, CliInputSources {
  signal?: AbortSignal;
  /** The account named with --account (required by credential and key actions). */
  account?: string;
}

export async function runManagementAction(
  command: ManagementAction,
  management: ManagementClient,
  context: ManagementRunContext,
): Promise<void> {
  const { args, values, json } = command;
  const call = { signal: context.signal };
  const out = (text: string): unknown => context.stdout.write(`${text}\n`);
  const note = (text: string): unknown => context.stderr.write(`${text}\n`);
  const printJson = (value: unknown): unknown => out(JSON.stringify(value, null, json ? undefined : 2));
  const string = (option: string): string | undefined => {
    const value = values[option];
    return typeof value === 'string' ? value : undefined;
  };
  const arg = (name: string): string => args[name] as string;
  const account = context.account as string;

  switch (command.action) {
    case 'agents list': {
      const agents = await management.listAgents(call);
      if (json) printJson(agents);
      else agents.forEach((agent) => out(agentLine(agent)));
      return;
    }
    case 'agents get':
      printJson(await management.getAgent(arg('workflow_id'), call));
      return;
    case 'agents put': {
      const definition = await readJsonSource(arg('file'), context);
      const stored = await management.putAgent(
        definition as Parameters<ManagementClient['putAgent']>[0],
        call,
      );
      if (json) printJson(stored);
      else out(`stored agent ${stored.workflow_id}`);
      return;
    }
    case 'agents versions': {
      const list = await management.listAgentVersions(arg('workflow_id'), call);
      if (json) printJson(list);
      else list.versions.forEach((v) => out(versionLine(v)));
      return;
    }
    case 'agents show': {
      const ref = parseWorkflowRefArg(arg('workflow_ref'));
      printJson(
        ref.version === undefined
          ? await management.getAgent(ref.workflow_id, call)
          : await management.getAgentVersion(ref.workflow_id, ref.version, call),
      );
      return;
    }
    case 'agents diff': {
      const diff = await management.diffAgentVersions(
        arg('workflow_id'),
        versionArg(arg('from'), 'from'),
        versionArg(arg('to'), 'to'),
        call,
      );
      if (json) printJson(diff);
      else if (diff.changes.length === 0) out('no changes');
      else diff.changes.forEach((change) => out(diffLine(change)));
      return;
    }
    case 'agents rollback': {
      const current = await management.rollbackAgent(
        arg('workflow_id'),
        versionArg(arg('version'), 'version'),
        call,
      );
      if (json) printJson(current);
      else out(`agent ${current.workflow_id} now runs version ${current.version ?? '?'}`);
      return;
    }
    case 'agents delete':
      await management.deleteAgent(arg('workflow_id'), call);
      if (!json) out(`deleted agent ${arg('workflow_id')}`);
      return;
    case 'tools list': {
      const tag = string('tag');
      const namespace = string('namespace');
      const tools = await management.listTools({
        ...call,
        ...(tag === undefined ? {} : { tag }),
        ...(namespace === undefined ? {} : { namespace }),
      });
      if (json) printJson(tools);
      else tools.forEach((tool) => out(toolLine(tool)));
      return;
    }
    case 'tools get':
      printJson(await management.getTool(arg('name'), call));
      return;
    case 'tools put': {
      const reply = await management.putTool(await readJsonSource(arg('file'), context), call);
      if (json) printJson(reply);
      else out(`stored tool ${reply.tool.name} (read as ${reply.format})`);
      return;
    }
    case 'tools delete':
      await management.deleteTool(arg('name'), call);
      if (!json) out(`deleted tool ${arg('name')}`);
      return;
    case 'tools import': {
      const document = await readSource(arg('file_or_url'), context, true);
      const operations = values.operation;
      const baseUrl = string('base-url');
      const namePrefix = string('name-prefix');
      const credentialPrefix = string('credential-prefix');
      const reply = await management.importOpenApi(document, {
        ...call,
        ...(Array.isArray(operations) ? { operations } : {}),
        ...(baseUrl === undefined ? {} : { baseUrl }),
        ...(namePrefix === undefined ? {} : { namePrefix }),
        ...(credentialPrefix === undefined ? {} : { credentialPrefix }),
        ...(values['dry-run'] === true ? { dryRun: true } : {}),
      });
      if (json) {
        printJson(reply);
        return;
      }
      const verb = reply.dry_run ? 'would import' : 'imported';
      for (const tool of reply.imported) {
        out(`${verb} ${tool.name}\t${tool.method} ${tool.path}${tool.existed ? '\t(replaced)' : ''}`);
      }
      for (const skipped of reply.skipped) note(`skipped ${skipped.operation}: ${skipped.reason}`);
      for (const warning of reply.warnings) note(`warning ${warning.operation}: ${warning.message}`);
      if (reply.credentials.length > 0) {
        note(
          `credentials these tools need (store them with \`agentmesh credentials put\`): ${reply.credentials.join(', ')}`,
        );
      }
      return;
    }
    case 'credentials list': {
      const user = string('user');
      const names =
        user === undefined
          ? await management.accountCredentialNames(account, call)
          : await management.listCredentials(account, user, call);
      if (json) printJson(names);
      else names.forEach((name) => out(name));
      return;
    }
    case 'credentials put': {
      const user = string('user');
      const value = await readSecret(context, `the value of credential ${arg('name')}`);
      if (user === undefined) await management.putAccountCredential(account, arg('name'), value, call);
      else await management.putCredential(account, user, arg('name'), value, call);
      if (!json) out(`stored credential ${arg('name')} for ${credentialSet(account, user)}`);
      return;
    }
    case 'credentials delete': {
      const user = string('user');
      if (user === undefined) await management.deleteAccountCredential(account, arg('name'), call);
      else await management.deleteCredential(account, user, arg('name'), call);
      if (!json) out(`deleted credential ${arg('name')} of ${credentialSet(account, user)}`);
      return;
    }
    case 'keys create': {
      const accountType = string('type');
      const label = string('label');
      const reply = await management.createApiKey(
        {
          accountId: account,
          ...(accountType === undefined ? {} : { accountType }),
          ...(label === undefined ? {} : { label }),
        },
        call,
      );
      if (json) {
        printJson(reply);
        return;
      }
      note(`API key for account ${reply.account_id} (type ${reply.account_type}); it is shown this once:`);
      if (reply.api_key !== undefined) out(reply.api_key);
      return;
    }
    case 'keys revoke':
      await management.revokeApiKey(await readSecret(context, 'the API key to revoke'), call);
      if (!json) out('revoked');
      return;
    case 'dead-letters list': {
      const workflowId = string('workflow');
      const limit = string('limit');
      const letters = await management.listDeadLetters({
        ...call,
        ...(workflowId === undefined ? {} : { workflowId }),
        ...(limit === undefined ? {} : { limit: Number(limit) }),
      });
      if (json) printJson(letters);
      else letters.forEach((letter) => out(deadLetterLine(letter)));
      return;
    }
    case 'dead-letters show':
      printJson(await management.getDeadLetter(arg('trace_id'), call));
      return;
    case 'dead-letters redrive': {
      const reply = await management.redriveDeadLetter(arg('trace_id'), call);
      if (json) printJson(reply);
      else {
        note(`re-driven ${reply.redriven_from} as a new task; its trace_id:`);
        out(reply.trace_id);
      }
      return;
    }
    case 'dead-letters drop':
      await management.dropDeadLetter(arg('trace_id'), call);
      if (!json) out(`dropped the dead letter of ${arg('trace_id')}`);
      return;
    case 'schedules list': {
      const schedules = await management.listSchedules(call);
      if (json) printJson(schedules);
      else schedules.forEach((schedule) => out(scheduleLine(schedule)));
      return;
    }
    case 'schedules show': {
      const next = string('next');
      const runs = string('runs');
      printJson(
        await management.getSchedule(arg('schedule_id'), {
          ...call,
          ...(next === undefined ? {} : { next: Number(next) }),
          ...(runs === undefined ? {} : { runs: Number(runs) }),
        }),
      );
      return;
    }
    case 'schedules create': {
      const file = string('file');
      const body: CreateScheduleRequestInput =
        file === undefined
          ? scheduleFromOptions(string, values.paused === true)
          : ((await readJsonSource(file, context)) as CreateScheduleRequestInput);
      const created = await management.createSchedule(body, call);
      if (json) printJson(created);
      else out(scheduleLine(created));
      return;
    }
    case 'schedules pause':
    case 'schedules resume': {
      const changed =
        command.action === 'schedules pause'
          ? await management.pauseSchedule(arg('schedule_id'), call)
          : await management.resumeSchedule(arg('schedule_id'), call);
      if (json) printJson(changed);
      else out(`${changed.paused ? 'paused' : 'resumed'} schedule ${changed.schedule_id}`);
      return;
    }
    case 'schedules delete':
      await management.deleteSchedule(arg('schedule_id'), call);
      if (!json) out(`deleted schedule ${arg('schedule_id')}`);
      return;
    case 'schedules run': {
      const key = string('idempotency-key');
      const reply = await management.runSchedule(arg('schedule_id'), {
        ...call,
        ...(key === undefined ? {} : { idempotencyKey: key }),
      });
      if (json) printJson(reply);
      else {
        note(
          `schedule ${reply.schedule_id} ${reply.duplicate ? 'ran already with this key' : 'fired'}; its task:`,
        );
        out(reply.trace_id);
      }
      return;
    }
    case 'webhooks create': {
      const events = values.event as string[] | undefined;
      const description = string('description');
      const created = await management.createWebhook(
        {
          url: arg('url'),
          ...(events === undefined ? {} : { events: events as TaskWebhookEvent[] }),
          ...(description === undefined ? {} : { description }),
        },
        call,
      );
      if (json) {
        printJson(created);
        return;
      }
      note(`webhook ${created.id} of account ${created.account_id}; its signing secret is shown this once:`);
      out(created.secret);
      return;
    }
    case 'webhooks list': {
      const webhooks = await management.listWebhooks(call);
      if (json) printJson(webhooks);
      else webhooks.forEach((webhook) => out(webhookLine(webhook)));
      return;
    }
    case 'webhooks show':
      printJson(await management.getWebhook(arg('id'), call));
      return;
    case 'webhooks delete':
      await management.deleteWebhook(arg('id'), call);
      if (!json) out(`deleted webhook ${arg('id')}`);
      return;
    case 'webhooks rotate': {
      const seconds = string('previous-valid-for');
      const rotated = await management.rotateWebhookSecret(arg('id'), {
        ...call,
        ...(seconds === undefined ? {} : { previousValidForS: Number(seconds) }),
      });
      if (json) {
        printJson(rotated);
        return;
      }
      note(`new signing secret of webhook ${rotated.id}; it is shown this once:`);
      out(rotated.secret);
      return;
    }
    case 'webhooks test': {
      const result = await management.testWebhook(arg('id'), call);
      if (json) printJson(result);
      else
        out(
          result.delivered
            ? `delivered (${result.status ?? ''}) as ${result.webhook_id}`
            : `not delivered: ${result.error ?? `HTTP ${result.status ?? '?'}`}`,
        );
      return;
    }
    case 'webhooks dead-letters': {
      const letters = await management.listWebhookDeadLetters(call);
      if (json) printJson(letters);
      else
        letters.forEach((letter) =>
          out(
            `${letter.webhook_id}\t${letter.account_id}\t${letter.endpoint_id}\t${letter.type}\t${letter.trace_id ?? ''}\t${letter.dead_at}\t${letter.reason}`,
          ),
        );
      return;
    }
    case 'webhooks redrive':
      await management.redriveWebhookDeadLetter(arg('webhook_id'), call);
      if (!json) out(`queued ${arg('webhook_id')} again`);
      return;
    case 'webhooks drop':
      await management.dropWebhookDeadLetter(arg('webhook_id'), call);
      if (!json) out(`dropped the dead delivery ${arg('webhook_id')}`);
      return;
  }
}

/** `schedules create` from options: unset options are left out, and the gateway says what is missing. */
function scheduleFromOptions(
  string: (option: string) => string | undefined,
  paused: boolean,
): CreateScheduleRequestInput {
  const every = string('every');
  const message = string('message');
  const body: Record<string, unknown> = {
    workflow_id: string('agent'),
    input: {
      user_id: string('user'),
      messages: message === undefined ? [] : [{ role: 'user', content: message }],
    },
  };
  for (const [field, value] of [
    ['cron', string('cron')],
    ['timezone', string('tz')],
    ['missed_policy', string('missed')],
    ['name', string('name')],
    ['thread_id', string('thread')],
  ] as const) {
    if (value !== undefined) body[field] = value;
  }
  if (every !== undefined) body.interval_seconds = Number(every);
  if (paused) body.paused = true;
  return body as CreateScheduleRequestInput;
}

function scheduleLine(schedule: ScheduleListItem): string {
  const when =
    schedule.cron !== undefined
      ? `${schedule.cron} (${schedule.timezone ?? 'UTC'})`
      : `every ${schedule.interval_seconds}s`;
  const state = schedule.paused ? 'paused' : `next ${schedule.next_fire_at ?? '-'}`;
  return `${schedule.schedule_id}\t${schedule.workflow_id}\t${when}\t${state}\tmissed: ${schedule.missed_policy}${schedule.thread_id ? `\tthread ${schedule.thread_id}` : ''}${schedule.name ? `\t${schedule.name}` : ''}`;
}

function webhookLine(webhook: WebhookEndpointView): string {
  return `${webhook.id}\t${webhook.url}\t${webhook.events.join(',')}\t${webhook.created_at}`;
}

function deadLetterLine(letter: DeadLetterView): string {
  const redriven = letter.redriven === undefined ? '' : `\tre-driven as ${letter.redriven.trace_id}`;
  return `${letter.trace_id}\t${letter.account_id}\t${letter.workflow_id}\t${letter.dead_at}\t${letter.reason.code} after ${letter.attempts} deliveries${redriven}`;
}

function agentLine(agent: ScopedAgent): string {
  return `${agent.workflow_id}\t${agent.scope}\t${agentModels(agent)
    .map((model) => model.model_name)
    .join(' > ')}${agent.tools.length > 0 ? `\ttools: ${agent.tools.join(', ')}` : ''}`;
}

function versionLine(version: AgentVersionSummary): string {
  return `${version.version}${version.current ? '\tcurrent' : '\t'}\t${version.digest}${version.created_at ? `\t${version.created_at}` : ''}`;
}

function diffLine(change: AgentDiffEntry): string {
  const show = (value: unknown): string => JSON.stringify(value);
  if (change.op === 'added') return `+ ${change.path}: ${show(change.to)}`;
  if (change.op === 'removed') return `- ${change.path}: ${show(change.from)}`;
  return `~ ${change.path}: ${show(change.from)} -> ${show(change.to)}`;
}

function versionArg(text: string, what: string): number {
  const version = parseAgentVersion(text);
  if (version === undefined) throw new CliInputError(`${what}: "${text}" is not a version (a number from 1)`);
  return version;
}

function parseWorkflowRefArg(text: string): WorkflowPin {
  const parsed = WorkflowRef.safeParse(text);
  if (!parsed.success) {
    throw new CliInputError(`"${text}" is not <workflow_id> or <workflow_id>@<version>`);
  }
  return parsed.data;
}

function toolLine(tool: ScopedTool): string {
  return `${tool.name}\t${tool.scope}\t${tool.type}`;
}

/** Whose credentials a command acted on, as printed. */
function credentialSet(account: string, user: string | undefined): string {
  return user === undefined
    ? `every user of account ${account} (account-wide)`
    : `user ${user} of account ${account}`;
}
