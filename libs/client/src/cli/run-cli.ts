/**
 * Runs one `agentmesh` command against the gateway and answers its exit status: 0 when the task ends
 * `done` (or the request succeeded), 1 on an `error` event or a failed request, 2 on bad usage, 130
 * when interrupted. Errors are printed as `error <CODE>: <message>` (with `--json`, as the error
 * body). The API key is never printed: messages name the gateway by its origin only.
 */
import type { ThreadStrategy } from '@agentmesh/protocol';
import { runThreadAction } from './run-threads.js';
import { TaskStatus, type TaskApprovals, type TaskEvent, type TaskStatusRecord } from '@agentmesh/protocol';
import { MeshApiError, MeshClientError, MeshUnreachableError } from '../errors.js';
import { ManagementClient } from '../management-client.js';
import { MeshClient } from '../mesh-client.js';
import { CliInputError, type CliInputSources } from './cli-input.js';
import {
  parseCliArgs,
  USAGE,
  UrlSource,
  UsageError,
  type CliCommand,
  type CliEnvironment,
  type Connection,
  type NatsConnection,
} from './cli-args.js';
import { EventPrinter, type CliStreams } from './event-printer.js';
import { runManagementAction } from './run-management.js';
import { printTailEvent } from './tail-printer.js';

export const ExitCode = { OK: 0, FAILED: 1, USAGE: 2, INTERRUPTED: 130 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface CliContext extends CliStreams, CliInputSources {
  env: CliEnvironment;
  /** Aborted on Ctrl-C. */
  signal?: AbortSignal;
  /** stdout and stderr are the same terminal. */
  sharedTerminal?: boolean;
}

export async function runCli(argv: readonly string[], context: CliContext): Promise<ExitCode> {
  let command: CliCommand;
  try {
    command = parseCliArgs(argv, context.env);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    context.stderr.write(`agentmesh: ${error.message}\n\n${USAGE}`);
    return ExitCode.USAGE;
  }
  if (command.name === 'help') {
    context.stdout.write(USAGE);
    return ExitCode.OK;
  }
  const json = 'json' in command && command.json;
  try {
    return await runCommand(command, clientFor(command.connection, context), context);
  } catch (error) {
    if (context.signal?.aborted) {
      context.stderr.write('agentmesh: interrupted\n');
      return ExitCode.INTERRUPTED;
    }
    if (error instanceof CliInputError) {
      context.stderr.write(
        json
          ? `${JSON.stringify({ code: 'INVALID_REQUEST', message: error.message })}\n`
          : `agentmesh: ${error.message}\n`,
      );
      return ExitCode.FAILED;
    }
    if (!(error instanceof MeshClientError)) throw error;
    reportError(error, json, context);
    if (!json) hint(error, command.connection, context);
    return ExitCode.FAILED;
  }
}

/** What to change when the cause is most likely the CLI's own configuration. */
function hint(error: MeshClientError, connection: Connection, context: CliContext): void {
  if (error instanceof MeshUnreachableError && error.message.startsWith('cannot reach the gateway')) {
    context.stderr.write(
      `hint: is the gateway running at ${connection.url}? ${urlAdvice(connection.urlSource)}\n`,
    );
  } else if (error instanceof MeshApiError && error.status === 401 && connection.apiKey === undefined) {
    context.stderr.write('hint: no API key given: set AGENTMESH_API_KEY (or pass --api-key)\n');
  }
}

function urlAdvice(source: UrlSource): string {
  switch (source) {
    case UrlSource.FLAG:
      return 'That URL came from --url.';
    case UrlSource.ENV:
      return 'That URL came from AGENTMESH_URL; change it, or pass --url.';
    case UrlSource.DEFAULT:
      return 'That is the default, used because neither --url nor AGENTMESH_URL was given: set AGENTMESH_URL to the gateway URL npm start printed.';
  }
}

function httpOptions(connection: Connection, context: CliContext) {
  return {
    baseUrl: connection.url,
    ...(connection.apiKey === undefined ? {} : { apiKey: connection.apiKey }),
    ...(connection.account === undefined ? {} : { headers: { 'x-account-id': connection.account } }),
    ...(context.fetch === undefined ? {} : { fetch: context.fetch }),
  };
}

function clientFor(connection: Connection, context: CliContext): MeshClient {
  return new MeshClient(httpOptions(connection, context));
}

async function runCommand(
  command: Exclude<CliCommand, { name: 'help' }>,
  client: MeshClient,
  context: CliContext,
): Promise<ExitCode> {
  const signal = context.signal;
  switch (command.name) {
    case 'manage':
      if (command.action.startsWith('threads ')) {
        await runThreadAction(command, client, context);
        return ExitCode.OK;
      }
      await runManagementAction(command, new ManagementClient(httpOptions(command.connection, context)), {
        ...context,
        ...(command.connection.account === undefined ? {} : { account: command.connection.account }),
      });
      return ExitCode.OK;
    case 'tail': {
      const onOpen = (): unknown =>
        command.json || context.stderr.write("following the account's events; Ctrl-C to stop\n");
      for await (const event of client.tail({ signal, onOpen }))
        printTailEvent(event, command.json, context.stdout);
      // The iteration only ends by throwing (the stream ended or broke off, or Ctrl-C).
      return ExitCode.FAILED;
    }
    case 'submit': {
      if (command.nats !== undefined) return submitAndFollowOverNats(command, command.nats, client, context);
      const reply = await client.submit(submissionOf(command), { signal });
      if (!command.follow) {
        context.stdout.write(command.json ? `${JSON.stringify(reply)}\n` : `${reply.trace_id}\n`);
        return ExitCode.OK;
      }
      // Printed first, so a follow that is interrupted can be resumed with `agentmesh events`.
      if (!command.json) context.stderr.write(`trace_id ${reply.trace_id}\n`);
      return follow(client, reply.trace_id, 0, command.json, context);
    }
    case 'events':
      return follow(client, command.traceId, command.afterSeq, command.json, context);
    case 'status':
      context.stdout.write(`${JSON.stringify(await client.status(command.traceId, { signal }), null, 2)}\n`);
      return ExitCode.OK;
    case 'approvals': {
      const approvals = await client.approvals(command.traceId, { signal });
      context.stdout.write(command.json ? `${JSON.stringify(approvals)}\n` : approvalsText(approvals));
      return ExitCode.OK;
    }
    case 'decide': {
      const approvals = await client.decideApproval(
        command.traceId,
        command.callId,
        command.comment === undefined
          ? { approve: command.approve }
          : { approve: command.approve, comment: command.comment },
        { signal },
      );
      context.stdout.write(
        command.json ? `${JSON.stringify(approvals)}\n` : decisionText(approvals, command.callId),
      );
      return ExitCode.OK;
    }
    case 'cancel': {
      const record = await client.cancel(command.traceId, {
        signal,
        ...(command.reason === undefined ? {} : { reason: command.reason }),
      });
      context.stdout.write(`${JSON.stringify(record, null, 2)}\n`);
      return ExitCode.OK;
    }
  }
}

/** One line per approval: `<call_id> <state> <tool> …`, then whether the task goes on. */
function approvalsText(approvals: TaskApprovals): string {
  if (approvals.approvals.length === 0) return `task ${approvals.trace_id} waits on no approval\n`;
  const lines = approvals.approvals.map((approval) =>
    approval.state === 'pending'
      ? `${approval.call_id} pending ${approval.tool}: ${approval.reason} (expires ${approval.expires_at})`
      : `${approval.call_id} ${approval.state} ${approval.tool}`,
  );
  return `${lines.join('\n')}\n${resumedText(approvals)}`;
}

function decisionText(approvals: TaskApprovals, callId: string): string {
  const approval = approvals.approvals.find((candidate) => candidate.call_id === callId);
  return `${callId} ${approval?.state ?? 'decided'}\n${resumedText(approvals)}`;
}

function resumedText(approvals: TaskApprovals): string {
  if (approvals.resumed) return `task ${approvals.trace_id} is queued to go on\n`;
  const pending = approvals.approvals.filter((approval) => approval.state === 'pending').length;
  return `task ${approvals.trace_id} still waits on ${pending} approval${pending === 1 ? '' : 's'}\n`;
}

/**
 * Connects to NATS first (a login that fails submits nothing), submits over HTTP, then follows the task
 * from its first stored event on JetStream.
 */
async function submitAndFollowOverNats(
  command: Extract<CliCommand, { name: 'submit' }>,
  nats: NatsConnection,
  client: MeshClient,
  context: CliContext,
): Promise<ExitCode> {
  // Loaded only here: the HTTP commands load no NATS code.
  const [{ connect }, { followTaskEventsOverNats }] = await Promise.all([
    import('@nats-io/transport-node'),
    import('../nats-task-events.js'),
  ]);
  let nc;
  try {
    nc = await connect({
      servers: nats.url,
      name: 'agentmesh-cli',
      maxReconnectAttempts: 10,
      ...(nats.user === undefined ? {} : { user: nats.user }),
      ...(nats.password === undefined ? {} : { pass: nats.password }),
      ...(nats.inboxPrefix === undefined ? {} : { inboxPrefix: nats.inboxPrefix }),
    });
  } catch (error) {
    throw new MeshUnreachableError(
      `cannot connect to NATS at ${natsServerName(nats.url)}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  try {
    const reply = await client.submit(submissionOf(command), { signal: context.signal });
    if (!command.json) context.stderr.write(`trace_id ${reply.trace_id}\n`);
    const printer = new EventPrinter(context, {
      json: command.json,
      sharedTerminal: context.sharedTerminal ?? false,
    });
    let terminal: TaskEvent | undefined;
    const events = followTaskEventsOverNats(
      nc,
      { eventsSubject: reply.events_subject },
      context.signal === undefined ? {} : { signal: context.signal },
    );
    for await (const event of events) {
      printer.print(event);
      terminal = event;
    }
    return terminal?.type === 'done' ? ExitCode.OK : ExitCode.FAILED;
  } finally {
    await nc.close();
  }
}

/** A NATS URL for messages: host and port only, never credentials it may carry. */
function natsServerName(url: string): string {
  try {
    const parsed = new URL(url.includes('://') ? url : `nats://${url}`);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return '(the given URL)';
  }
}

function submissionOf(command: Extract<CliCommand, { name: 'submit' }>) {
  return {
    workflow_id: command.workflowId,
    user_id: command.userId,
    messages: [{ role: 'user' as const, content: command.message }],
    ...(command.idempotencyKey === undefined ? {} : { idempotency_key: command.idempotencyKey }),
    ...(command.traceId === undefined ? {} : { trace_id: command.traceId }),
    ...(command.threadId === undefined ? {} : { thread_id: command.threadId }),
    ...(command.threadStrategy === undefined
      ? {}
      : { thread_strategy: command.threadStrategy as ThreadStrategy }),
  };
}

async function follow(
  client: MeshClient,
  traceId: string,
  afterSeq: number,
  json: boolean,
  context: CliContext,
): Promise<ExitCode> {
  const printer = new EventPrinter(context, { json, sharedTerminal: context.sharedTerminal ?? false });
  let terminal: TaskEvent | undefined;
  for await (const event of client.events(traceId, { lastEventId: afterSeq, signal: context.signal })) {
    printer.print(event);
    terminal = event;
  }
  if (terminal?.type === 'done') return ExitCode.OK;
  if (terminal?.type === 'error') return ExitCode.FAILED;
  // The gateway had nothing after `afterSeq` (204): the task ended earlier; its status says how.
  return exitCodeOfStatus(await client.status(traceId, { signal: context.signal }));
}

function exitCodeOfStatus(record: TaskStatusRecord): ExitCode {
  return record.status === TaskStatus.DONE ? ExitCode.OK : ExitCode.FAILED;
}

function reportError(error: MeshClientError, json: boolean, context: CliContext): void {
  if (json) {
    const body =
      error instanceof MeshApiError ? error.toBody() : { code: error.code, message: error.message };
    context.stderr.write(`${JSON.stringify(body)}\n`);
    return;
  }
  context.stderr.write(`error ${error.code}: ${error.message}\n`);
  if (error instanceof MeshApiError && error.detail !== undefined) {
    context.stderr.write(`detail: ${JSON.stringify(error.detail)}\n`);
  }
}
