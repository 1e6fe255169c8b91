/**
 * A2A tools: a call of one is one task on a remote A2A agent, driven with the official SDK's client. The
 * card (agent-cards.ts) says where and how to reach the agent; every request goes through the executor's
 * SSRF guard (a2a-fetch.ts) with the tool's credential, from the task's vault, for the card's origin only.
 *
 * A call sends the model's `message` (other arguments, if the tool declares any, as a data part) with
 * `SendStreamingMessage`, the message id derived from the call's idempotency key so a server that
 * deduplicates by message id runs a redelivered call once. The remote task's status messages become
 * `tool_progress` events, each with the remote task's id; its artifacts the result. A stream that breaks
 * off before the task ends is picked up again with `SubscribeToTask` (then `GetTask`). The task's end
 * (cancel, deadline) and the call's timeout send `CancelTask` to the remote task before the call returns; an
 * attempt that only hands its task on leaves it running, and the next attempt, given its id from the log,
 * follows it instead of sending the message again. Remote failed, rejected and canceled tasks, and ones
 * that stop for input or authentication, are tool errors that say so. A task that stopped for input can be
 * answered: a later call of the same tool names it in `continue_task_id` and its message goes to that remote
 * task (remote-input-requests.ts says which ids a call may name).
 */
import { Role, type AgentCard, type Message, type Part, type StreamResponse } from '@a2a-js/sdk';
import { A2AError } from '@a2a-js/sdk/errors';
import {
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
} from '@a2a-js/sdk/client';
import {
  A2A_CONTINUE_TASK_ARGUMENT,
  ErrorCode,
  type A2aTool,
  type ClearVault,
  type ToolDefinition,
} from '@agentmesh/protocol';
import type { Dispatcher } from 'undici';
import type { SecretScrubber } from '../../secrets/index.js';
import { TaskAbortReason } from '../../task-abort.js';
import { findDenial } from '../http/outbound-request.js';
import type { OutboundGuard } from '../http/outbound-guard.js';
import { truncationMarker } from '../http/response-reader.js';
import { CredentialsMissingError, ToolCallError } from '../tool-errors.js';
import { toolFailure, toolSuccess, type ToolOutcome } from '../tool-outcome.js';
import {
  RemoteAgentAuthError,
  RemoteAgentUnreachableError,
  RemoteInputRequiredError,
  RemoteTaskFailedError,
} from './a2a-errors.js';
import { a2aFetch } from './a2a-fetch.js';
import { AgentCards, describedA2aTool, type AgentCardsOptions } from './agent-cards.js';
import type { AwaitingRemoteInput, RemoteInputRequests } from './remote-input-requests.js';
import { RemoteOutcome, RemoteTask } from './remote-task.js';

/** The message metadata key naming the skill a tool asks for. */
export const A2A_SKILL_METADATA = 'agentmesh/skill';
/** The message metadata key carrying the call's idempotency key (`<trace_id>:<call_id>`). */
export const A2A_IDEMPOTENCY_KEY_METADATA = 'agentmesh/idempotency-key';

/** How many times a stream that broke off is picked up again before the call gives up. */
const MAX_RESUBSCRIBES = 3;
/** How long the remote agent is given to take a cancel. */
const CANCEL_TIMEOUT_MS = 5_000;

export interface A2aToolRunnerOptions {
  readonly guard: OutboundGuard;
  /** Connects only to addresses the guard checked (`guard.createAgent()`). */
  readonly dispatcher: Dispatcher;
  /** Budget of a call whose tool sets no timeout_ms. */
  readonly defaultTimeoutMs: number;
  /** Bytes of an answer passed on; the rest is cut off and marked. */
  readonly maxResultBytes: number;
  readonly cards: AgentCardsOptions;
}

/** What describing a task's A2A tools needs from the task. */
export interface A2aTaskContext {
  readonly vault: ClearVault;
  readonly account: string;
  readonly scrubber: SecretScrubber;
}

export interface A2aToolRunContext extends A2aTaskContext {
  readonly callId: string;
  /** `<trace_id>:<call_id>`, the same for a call run again after a redelivery. */
  readonly idempotencyKey?: string;
  /** The remote task an earlier attempt's run of this call started (its `tool_progress.remote_task_id`). */
  readonly remoteTaskId?: string;
  /** The task's remote tasks waiting for input: the only ones `continue_task_id` may name. */
  readonly remoteInputs?: Pick<RemoteInputRequests, 'waitingFor'>;
  readonly signal: AbortSignal;
  readonly onProgress?: (progress: { progress: number; message?: string; remote_task_id?: string }) => void;
}

export class A2aToolRunner {
  readonly #cards: AgentCards;

  constructor(private readonly options: A2aToolRunnerOptions) {
    this.#cards = new AgentCards(options.cards);
  }

  /**
   * The task's tools with each A2A tool described by its card. A card that cannot be read leaves its tool
   * as stored (the call then says why it cannot run); `unread` names them, for the log.
   */
  async describe(
    tools: readonly ToolDefinition[],
    task: A2aTaskContext,
  ): Promise<{ tools: ToolDefinition[]; unread: { tool: string; reason: string }[] }> {
    const unread: { tool: string; reason: string }[] = [];
    const described = await Promise.all(
      tools.map(async (tool) => {
        if (tool.type !== 'A2A') return tool;
        try {
          const credentials = credentialHeaders(tool, task.vault);
          const fetcher = this.#fetch(tool, credentials);
          const card = await this.#cards.get({ account: task.account, credentials }, tool.card_url, fetcher);
          return describedA2aTool(tool, card);
        } catch (error) {
          unread.push({ tool: tool.name, reason: task.scrubber.scrub(describe(error)) });
          return tool;
        }
      }),
    );
    return { tools: described, unread };
  }

  async run(tool: A2aTool, args: Record<string, unknown>, ctx: A2aToolRunContext): Promise<ToolOutcome> {
    const { [A2A_CONTINUE_TASK_ARGUMENT]: continueTaskId, ...request } = args;
    let answering: { taskId: string; waiting: AwaitingRemoteInput } | undefined;
    if (continueTaskId !== undefined) {
      const waiting =
        typeof continueTaskId === 'string'
          ? ctx.remoteInputs?.waitingFor(tool.name, continueTaskId)
          : undefined;
      if (typeof continueTaskId !== 'string' || waiting === undefined)
        return notWaiting(tool, continueTaskId);
      answering = { taskId: continueTaskId, waiting };
    }
    const timeoutMs = tool.timeout_ms ?? this.options.defaultTimeoutMs;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = AbortSignal.any([ctx.signal, timeout.signal]);
    const remote = new RemoteTask();
    let client: Client | undefined;
    const statuses: number[] = [];
    try {
      const credentials = credentialHeaders(tool, ctx.vault);
      const fetcher = this.#fetch(tool, credentials, (status) => statuses.push(status));
      const card = await this.#cards.get(
        { account: ctx.account, credentials },
        tool.card_url,
        fetcher,
        signal,
      );
      const connected = await clientFor(card, fetcher);
      client = connected;
      let progress = 0;
      let announced: string | undefined;
      const report = (message: string) => {
        progress += 1;
        ctx.onProgress?.({
          progress,
          message: ctx.scrubber.scrub(message),
          ...(remote.taskId === undefined ? {} : { remote_task_id: remote.taskId }),
        });
      };
      // Reads a stream into the remote task; a stream that breaks off once the task's id is known is left
      // for the loop below to pick up again (anything else is thrown).
      const follow = async (stream: AsyncGenerator<StreamResponse>) => {
        try {
          for await (const item of stream) {
            const { status } = remote.apply(item);
            // The task's id goes into the log at once: an attempt that takes over follows this task.
            if (remote.taskId !== undefined && announced !== remote.taskId && status === undefined) {
              announced = remote.taskId;
              report(`the remote agent took the task (${remote.taskId})`);
            }
            if (status !== undefined) {
              announced = remote.taskId;
              report(status);
            }
            // The SDK's server keeps an auth-required stream open (it waits for the credential out of band).
            if (remote.settled) break;
          }
        } catch (error) {
          if (signal.aborted || remote.taskId === undefined || !isBrokenStream(error)) throw error;
        }
      };
      const send = () =>
        follow(connected.sendMessageStream({ ...sendRequest(tool, request, ctx, answering) }, { signal }));
      if (ctx.remoteTaskId === undefined) {
        await send();
      } else {
        // An earlier attempt's call: follow its remote task; one the agent no longer knows is sent anew.
        remote.taskId = announced = ctx.remoteTaskId;
        try {
          await this.#pickUp(connected, remote, follow, signal);
        } catch (error) {
          if (signal.aborted || !(error instanceof A2AError)) throw error;
          remote.reset();
          await send();
        }
      }
      for (let attempt = 0; !remote.settled && remote.taskId !== undefined; attempt += 1) {
        if (attempt >= MAX_RESUBSCRIBES) {
          throw new RemoteAgentUnreachableError(
            `the stream of the remote task ${remote.taskId} broke off ${attempt + 1} times before it ended`,
            { detail: { task_id: remote.taskId } },
          );
        }
        await this.#pickUp(connected, remote, follow, signal);
      }
      if (!remote.settled) {
        throw new RemoteAgentUnreachableError(
          `the remote agent of ${tool.name} ended the stream without a task`,
        );
      }
      return this.#outcome(tool, remote, ctx.scrubber);
    } catch (error) {
      if (signal.aborted) {
        // An attempt that only hands its task on (executor stopping, event stream lost) leaves the remote
        // task running: the next attempt follows it again (its id is in the call's tool_progress).
        if (!handsOver(ctx.signal)) await cancelRemote(client, remote);
        return timeout.signal.aborted && !ctx.signal.aborted
          ? toolFailure(
              ErrorCode.TOOL_TIMEOUT,
              `${tool.name} did not finish within ${timeoutMs} ms; the remote task was cancelled`,
              remoteDetail(remote),
            )
          : toolFailure(ErrorCode.CANCELLED, `the call to ${tool.name} was cancelled`, remoteDetail(remote));
      }
      return fromError(error, tool, remote, statuses, ctx.scrubber);
    } finally {
      clearTimeout(timer);
    }
  }

  /** A stream that broke off: subscribe to the task again, or read it when it has ended meanwhile. */
  async #pickUp(
    client: Client,
    remote: RemoteTask,
    follow: (stream: AsyncGenerator<StreamResponse>) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const id = remote.taskId as string;
    try {
      await follow(client.resubscribeTask({ tenant: '', id }, { signal }));
    } catch (error) {
      // A task that ended meanwhile refuses subscriptions: it is read below.
      if (signal.aborted || !(error instanceof A2AError)) throw error;
    }
    if (remote.settled) return;
    // Ended meanwhile (a subscription to an ended task is refused), or the subscription broke off too.
    try {
      remote.apply({
        payload: { $case: 'task', value: await client.getTask({ tenant: '', id }, { signal }) },
      });
    } catch (error) {
      if (signal.aborted || !isBrokenStream(error)) throw error;
    }
  }

  #outcome(tool: A2aTool, remote: RemoteTask, scrubber: SecretScrubber): ToolOutcome {
    const said = remote.statusText === undefined ? '' : `: ${scrubber.scrub(remote.statusText)}`;
    const detail = remoteDetail(remote);
    switch (remote.outcome) {
      case RemoteOutcome.COMPLETED:
        // The dispatcher scrubs every outcome too; an agent echoing the credential is caught here already.
        return answerOutcome(scrubber.scrub(remote.answer()), this.options.maxResultBytes);
      case RemoteOutcome.INPUT_REQUIRED:
        return failed(
          new RemoteInputRequiredError(
            remote.taskId === undefined
              ? `the remote agent of ${tool.name} needs more input${said}; call it again with a message that says everything it asks for`
              : `the remote agent of ${tool.name} needs more input${said}; to answer it, call ${tool.name} again with ${A2A_CONTINUE_TASK_ARGUMENT} ${JSON.stringify(remote.taskId)} and a message that answers it (or without ${A2A_CONTINUE_TASK_ARGUMENT}, with a message that says everything, to start anew)`,
            { detail },
          ),
        );
      case RemoteOutcome.AUTH_REQUIRED:
        return failed(
          new RemoteAgentAuthError(
            `the remote agent of ${tool.name} asks for authentication${said}; the tool's credential is missing or not accepted`,
            { detail },
          ),
        );
      case RemoteOutcome.REJECTED:
        return failed(
          new RemoteTaskFailedError(`the remote agent of ${tool.name} rejected the task${said}`, { detail }),
        );
      case RemoteOutcome.CANCELED:
        return failed(
          new RemoteTaskFailedError(`the remote agent of ${tool.name} cancelled the task${said}`, { detail }),
        );
      default:
        return failed(
          new RemoteTaskFailedError(`the remote agent of ${tool.name} failed${said}`, { detail }),
        );
    }
  }

  #fetch(
    tool: A2aTool,
    credentials: Record<string, string>,
    onStatus?: (status: number) => void,
  ): typeof fetch {
    return a2aFetch({
      guard: this.options.guard,
      dispatcher: this.options.dispatcher,
      origin: new URL(tool.card_url).origin,
      credentials,
      ...(onStatus === undefined ? {} : { onStatus }),
    });
  }
}

/** The tool's credential as the header it goes in; throws when the vault lacks it. */
function credentialHeaders(tool: A2aTool, vault: ClearVault): Record<string, string> {
  if (tool.auth === undefined) return {};
  const value = vault[tool.auth.credential];
  if (!value) throw new CredentialsMissingError([tool.auth.credential]);
  return tool.auth.header === undefined
    ? { authorization: `Bearer ${value}` }
    : { [tool.auth.header]: value };
}

async function clientFor(card: AgentCard, fetcher: typeof fetch): Promise<Client> {
  const legacyCompat = { enabled: true };
  const factory = new ClientFactory({
    transports: [
      new JsonRpcTransportFactory({ fetchImpl: fetcher, legacyCompat }),
      new RestTransportFactory({ fetchImpl: fetcher, legacyCompat }),
    ],
  });
  return factory.createFromAgentCard(card);
}

function sendRequest(
  tool: A2aTool,
  args: Record<string, unknown>,
  ctx: A2aToolRunContext,
  answering: { taskId: string; waiting: AwaitingRemoteInput } | undefined,
) {
  const { message: text, ...rest } = args;
  const parts: Part[] = [textPart(typeof text === 'string' ? text : JSON.stringify(text ?? ''))];
  if (Object.keys(rest).length > 0) parts.push(dataPart(rest));
  const metadata = {
    ...(tool.skill === undefined ? {} : { [A2A_SKILL_METADATA]: tool.skill }),
    ...(ctx.idempotencyKey === undefined ? {} : { [A2A_IDEMPOTENCY_KEY_METADATA]: ctx.idempotencyKey }),
  };
  const message: Message = {
    messageId: ctx.idempotencyKey ?? crypto.randomUUID(),
    contextId: answering?.waiting.contextId ?? '',
    taskId: answering?.taskId ?? '',
    role: Role.ROLE_USER,
    parts,
    metadata: Object.keys(metadata).length === 0 ? undefined : metadata,
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

function textPart(text: string): Part {
  return {
    content: { $case: 'text', value: text },
    metadata: undefined,
    filename: '',
    mediaType: 'text/plain',
  };
}

function dataPart(value: unknown): Part {
  return {
    content: { $case: 'data', value },
    metadata: undefined,
    filename: '',
    mediaType: 'application/json',
  };
}

async function cancelRemote(client: Client | undefined, remote: RemoteTask): Promise<void> {
  if (client === undefined || remote.taskId === undefined || remote.settled) return;
  try {
    await client.cancelTask(
      { tenant: '', id: remote.taskId, metadata: undefined },
      { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) },
    );
  } catch {
    // Best effort: the remote task may have ended meanwhile, or its agent be gone.
  }
}

function answerOutcome(text: string, maxBytes: number): ToolOutcome {
  if (Buffer.byteLength(text, 'utf8') <= maxBytes) return toolSuccess(text);
  const bytes = Buffer.from(text, 'utf8').subarray(0, maxBytes);
  const cut = new TextDecoder('utf-8', { fatal: false }).decode(bytes).replace(/\uFFFD$/, '');
  return toolSuccess(cut + truncationMarker(maxBytes), true);
}

function remoteDetail(remote: RemoteTask): Record<string, string> | undefined {
  if (remote.taskId === undefined) return undefined;
  return {
    task_id: remote.taskId,
    state: remote.outcome,
    ...(remote.contextId ? { context_id: remote.contextId } : {}),
  };
}

/** A `continue_task_id` that names no remote task of this task and tool waiting for input: nothing is sent. */
function notWaiting(tool: A2aTool, taskId: unknown): ToolOutcome {
  return toolFailure(
    ErrorCode.INVALID_REQUEST,
    `${A2A_CONTINUE_TASK_ARGUMENT} ${JSON.stringify(taskId)} is not a remote task of ${tool.name} that waits for input in this task; call ${tool.name} without it to start a new one`,
    { [A2A_CONTINUE_TASK_ARGUMENT]: typeof taskId === 'string' ? taskId : null },
  );
}

function failed(error: ToolCallError): ToolOutcome {
  return toolFailure(error.code, error.message, error.detail);
}

function fromError(
  error: unknown,
  tool: A2aTool,
  remote: RemoteTask,
  statuses: readonly number[],
  scrubber: SecretScrubber,
): ToolOutcome {
  const denial = findDenial(error);
  const coded = denial ?? findCoded(error);
  if (coded !== undefined) {
    return toolFailure(coded.code, scrubber.scrub(coded.message), scrubber.scrubDeep(coded.detail));
  }
  const refused = statuses.find((status) => status === 401 || status === 403);
  if (refused !== undefined) {
    return failed(
      new RemoteAgentAuthError(
        `the remote agent of ${tool.name} refused the call (HTTP ${refused}); the tool's credential is missing or not accepted`,
        { detail: { status: refused } },
      ),
    );
  }
  if (error instanceof A2AError) {
    return failed(
      new RemoteTaskFailedError(
        scrubber.scrub(`the remote agent of ${tool.name} answered an error: ${error.message}`),
        {
          detail: remoteDetail(remote),
        },
      ),
    );
  }
  return failed(
    new RemoteAgentUnreachableError(
      scrubber.scrub(`the remote agent of ${tool.name} could not be reached: ${describe(error)}`),
      {
        detail: remoteDetail(remote),
      },
    ),
  );
}

/** Whether the task's abort only hands this attempt on, rather than ending the task (cancel, deadline). */
function handsOver(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason instanceof TaskAbortReason && !signal.reason.endsTask;
}

/** An exchange that broke off (connection reset, stream cut), not an answer, a refusal or our own error. */
function isBrokenStream(error: unknown): boolean {
  return findCoded(error) === undefined && findDenial(error) === undefined && !(error instanceof A2AError);
}

/** A tool error thrown inside the SDK (our fetch's) may come wrapped in the SDK's own error. */
function findCoded(error: unknown): ToolCallError | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (current instanceof ToolCallError) return current;
    current = current.cause;
  }
  return undefined;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
