// A real A2A agent on loopback for tests, built from the official SDK's server parts (its request handler and
// framework-agnostic JSON-RPC transport, behind node:http): the card at /.well-known/agent-card.json, the
// JSON-RPC binding at /a2a. Each turn is played by the test's script; what reached the server (card fetches,
// JSON-RPC calls with their headers, cancels) is recorded for the test to check.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Role,
  TaskState,
  type AgentCard,
  type AgentSkill,
  type Message,
  type Part,
  type Task,
} from '@a2a-js/sdk';
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  defaultServerCallContextBuilder,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';

/** What a script may send in an artifact: text, or a JSON value (a data part). */
export type ArtifactContent = { text: string } | { data: unknown };

/** One turn of the agent: the user's message, and what the script can make the remote task do. */
export interface AgentTurn {
  readonly taskId: string;
  readonly text: string;
  readonly metadata: Record<string, unknown> | undefined;
  readonly headers: IncomingHttpHeaders;
  /** A `working` status update carrying `text`. */
  working(text: string): void;
  artifact(name: string, parts: ArtifactContent[]): void;
  /** The last status update: completed, failed, rejected, input-required or auth-required. */
  end(state: EndState, text?: string): void;
  /** Settles when the client asked to cancel this task (`CancelTask`); the server then ends it canceled. */
  readonly cancelled: Promise<void>;
  /** Settles when a client subscribed to this task again (`SubscribeToTask`). */
  readonly resubscribed: Promise<void>;
}

export type EndState = 'completed' | 'failed' | 'rejected' | 'input-required' | 'auth-required';

const END_STATES: Record<EndState, TaskState> = {
  completed: TaskState.TASK_STATE_COMPLETED,
  failed: TaskState.TASK_STATE_FAILED,
  rejected: TaskState.TASK_STATE_REJECTED,
  'input-required': TaskState.TASK_STATE_INPUT_REQUIRED,
  'auth-required': TaskState.TASK_STATE_AUTH_REQUIRED,
};

export interface A2aTestAgentOptions {
  /** Plays a turn; it must end the task (`end`) or wait for `cancelled`. */
  readonly script: (turn: AgentTurn) => Promise<void>;
  readonly skills?: { id: string; name: string; description: string; examples?: string[] }[];
  /** Where the card says the JSON-RPC binding is; this server's own /a2a when absent. */
  readonly interfaceUrl?: (ownBase: string) => string;
  /** Requests without this exact Authorization (or other) header get 401 (the card too, unless `publicCard`). */
  readonly requireHeader?: { name: string; value: string };
  readonly publicCard?: boolean;
  /** Further fields of the served card (e.g. padding that makes it too large). */
  readonly cardExtra?: Record<string, unknown>;
  /** Cuts the connection of a `SendStreamingMessage` after this many events (the task runs on). */
  readonly dropStreamAfter?: number;
}

export interface A2aTestAgent {
  /** The card's URL. */
  readonly cardUrl: string;
  readonly baseUrl: string;
  readonly cardFetches: IncomingHttpHeaders[];
  /** Every JSON-RPC call: its method and headers. */
  readonly calls: { method: string; headers: IncomingHttpHeaders }[];
  /** Task ids the client cancelled. */
  readonly cancels: string[];
  stop(): Promise<void>;
}

export async function startA2aTestAgent(options: A2aTestAgentOptions): Promise<A2aTestAgent> {
  const cardFetches: IncomingHttpHeaders[] = [];
  const calls: { method: string; headers: IncomingHttpHeaders }[] = [];
  const cancels: string[] = [];
  const cancelHooks = new Map<string, () => void>();
  const resubscribeHooks = new Map<string, () => void>();
  // Known once the server listens (the card names its port).
  const served: { card?: AgentCard } = {};

  const executor: AgentExecutor = {
    async execute(context: RequestContext, bus: ExecutionEventBus) {
      const { taskId, contextId } = context;
      const message = context.userMessage;
      bus.publish(AgentEvent.task(newTask(taskId, contextId, message)));
      let cancel: () => void = () => undefined;
      const cancelled = new Promise<void>((resolve) => (cancel = resolve));
      cancelHooks.set(taskId, cancel);
      let resubscribe: () => void = () => undefined;
      const resubscribed = new Promise<void>((resolve) => (resubscribe = resolve));
      resubscribeHooks.set(taskId, resubscribe);
      const status = (state: TaskState, text?: string) =>
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state,
              message: text === undefined ? undefined : agentMessage(taskId, contextId, text),
              timestamp: new Date().toISOString(),
            },
            metadata: undefined,
          }),
        );
      const turn: AgentTurn = {
        taskId,
        text: message.parts
          .map((part) => (part.content?.$case === 'text' ? part.content.value : ''))
          .join(''),
        metadata: message.metadata,
        headers: (context.context.state.get('headers') as IncomingHttpHeaders | undefined) ?? {},
        working: (text) => status(TaskState.TASK_STATE_WORKING, text),
        artifact: (name, parts) =>
          bus.publish(
            AgentEvent.artifactUpdate({
              taskId,
              contextId,
              artifact: {
                artifactId: crypto.randomUUID(),
                name,
                description: '',
                parts: parts.map(part),
                metadata: undefined,
                extensions: [],
              },
              append: false,
              lastChunk: true,
              metadata: undefined,
            }),
          ),
        end: (state, text) => {
          status(END_STATES[state], text);
          bus.finished();
        },
        cancelled,
        resubscribed,
      };
      await options.script(turn);
    },
    async cancelTask(taskId: string, bus: ExecutionEventBus) {
      cancels.push(taskId);
      cancelHooks.get(taskId)?.();
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: '',
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: undefined },
          metadata: undefined,
        }),
      );
      bus.finished();
    },
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      const required = options.requireHeader;
      const cardRequest = req.method === 'GET' && req.url === '/.well-known/agent-card.json';
      const guarded = required !== undefined && !(cardRequest && options.publicCard === true);
      if (guarded && req.headers[required.name.toLowerCase()] !== required.value) {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
        return;
      }
      if (cardRequest) {
        cardFetches.push(req.headers);
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ...served.card, ...options.cardExtra }));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/a2a') {
        res.writeHead(404).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        method?: string;
        id?: unknown;
        params?: { id?: string };
      };
      calls.push({ method: String(body.method), headers: req.headers });
      const dropAfter = body.method === 'SendStreamingMessage' ? options.dropStreamAfter : undefined;
      const version = req.headers['a2a-version'];
      const context = defaultServerCallContextBuilder({
        extensions: undefined,
        user: undefined,
        headers: req.headers,
        ...(typeof version === 'string' ? { requestedVersion: version } : {}),
      });
      const answer = await transport.handle(body, context);
      if (typeof (answer as AsyncGenerator)[Symbol.asyncIterator] !== 'function') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      if (body.method === 'SubscribeToTask' && body.params?.id !== undefined) {
        // Told once the subscription is in place, so what the task publishes next reaches it.
        setImmediate(() => resubscribeHooks.get(body.params?.id ?? '')?.());
      }
      let sent = 0;
      try {
        for await (const event of answer as AsyncGenerator) {
          // Flushed before the cut, so the client has read these events when the connection dies.
          await new Promise<void>((resolve) =>
            res.write(`data: ${JSON.stringify(event)}\n\n`, () => resolve()),
          );
          sent += 1;
          if (dropAfter !== undefined && sent >= dropAfter) {
            res.socket?.destroy();
            return;
          }
        }
      } catch (error) {
        const failure = {
          jsonrpc: '2.0',
          id: body.id ?? null,
          error: JsonRpcTransportHandler.mapToJSONRPCError(error),
        };
        res.write(`event: error\ndata: ${JSON.stringify(failure)}\n\n`);
      }
      res.end();
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = agentCard(baseUrl, options);
  served.card = card;
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const transport = new JsonRpcTransportHandler(handler);

  return {
    cardUrl: `${baseUrl}/.well-known/agent-card.json`,
    baseUrl,
    cardFetches,
    calls,
    cancels,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function agentCard(baseUrl: string, options: A2aTestAgentOptions): AgentCard {
  const skills: AgentSkill[] = (options.skills ?? []).map((skill) => ({
    id: skill.id,
    name: skill.name,
    description: skill.description,
    tags: [],
    examples: skill.examples ?? [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  }));
  return {
    name: 'Travel agent',
    description: 'Plans trips and books them.',
    supportedInterfaces: [
      {
        url: options.interfaceUrl?.(baseUrl) ?? `${baseUrl}/a2a`,
        protocolBinding: 'JSONRPC',
        tenant: '',
        protocolVersion: '1.0',
      },
    ],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills,
    signatures: [],
  };
}

function newTask(id: string, contextId: string, message: Message): Task {
  return {
    id,
    contextId,
    status: {
      state: TaskState.TASK_STATE_SUBMITTED,
      message: undefined,
      timestamp: new Date().toISOString(),
    },
    artifacts: [],
    history: [message],
    metadata: undefined,
  };
}

function agentMessage(taskId: string, contextId: string, text: string): Message {
  return {
    messageId: crypto.randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_AGENT,
    parts: [part({ text })],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function part(content: ArtifactContent): Part {
  return 'text' in content
    ? {
        content: { $case: 'text', value: content.text },
        metadata: undefined,
        filename: '',
        mediaType: 'text/plain',
      }
    : {
        content: { $case: 'data', value: content.data },
        metadata: undefined,
        filename: '',
        mediaType: 'application/json',
      };
}
