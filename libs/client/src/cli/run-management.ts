/**
 * Runs one management command ({@link ManagementAction}) with the {@link ManagementClient} and prints
 * its outcome: short human lines on stdout (notes on stderr), or the gateway's answer as JSON with
 * `--json`. Secrets are read from stdin and never printed, except a key the gateway generated, which
 * `keys create` prints alone on stdout this once (so `KEY=$(agentmesh keys create)` keeps it).
 */
import { agentModels, type DeadLetterView, type ScopedAgent, type ScopedTool } from '@agentmesh/protocol';
import type { ManagementClient } from '../management-client.js';
import { readJsonSource, readSecret, readSource, type CliInputSources } from './cli-input.js';
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
  }
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

function toolLine(tool: ScopedTool): string {
  return `${tool.name}\t${tool.scope}\t${tool.type}`;
}

/** Whose credentials a command acted on, as printed. */
function credentialSet(account: string, user: string | undefined): string {
  return user === undefined
    ? `every user of account ${account} (account-wide)`
    : `user ${user} of account ${account}`;
}
