/**
 * A real OpenAI-compatible model server on 127.0.0.1 that answers from a script: queued steps in
 * order, then a `respond` function that can look at the conversation (so concurrent tasks each get
 * the answer their conversation calls for). Every request is recorded with what the server did.
 *
 *   POST /v1/chat/completions   streaming (SSE) when `stream: true`, else one `chat.completion`
 *   POST …/chat/completions     the same under any other prefix (Azure's `/openai/deployments/<id>/…`)
 *   GET  /v1/models
 *   POST any other path               only with `anyPath` (native APIs: Anthropic `/v1/messages`, Gemini
 *                                     `…:streamGenerateContent`, OpenAI `/v1/responses`), body unchecked
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { recordRequest, type RecordedRequest } from '../http/recorded-request.js';
import { RequestLog } from '../http/request-log.js';
import { startLoopbackServer } from '../http/loopback-server.js';
import type {
  ChatCompletionRequest,
  ChatRequestBody,
  ModelOutcome,
  ModelStep,
  RespondFunction,
} from './model-script.js';
import { isFault, isRaw } from './model-script.js';
import { errorBody, sendJson, writeStep } from './step-writer.js';

export interface ScriptedModelOptions {
  /** Steps answered in order, before `respond` is asked. More can be added with `enqueue`. */
  script?: readonly ModelStep[];
  /** Asked when the queued steps are used up. */
  respond?: RespondFunction;
  /** Model ids listed by `GET /v1/models`. Default `['scripted-model']`. */
  models?: readonly string[];
  /** When set, requests must carry `Authorization: Bearer <apiKey>` (else 401). */
  apiKey?: string;
  /**
   * Answer a POST to any path from the script, its JSON body not checked as a chat request: for replaying
   * native provider APIs (raw steps). Default false: only `…/chat/completions`.
   */
  anyPath?: boolean;
}

export interface RecordedModelRequest extends RecordedRequest {
  /** What the server answered with. */
  outcome: ModelOutcome;
  /** The script step played, when there was one. */
  step?: ModelStep;
}

export interface ScriptedModel {
  /** `http://127.0.0.1:<port>/v1` — the `baseURL` an OpenAI client takes. */
  baseUrl: string;
  /** Every request received, in arrival order. */
  requests: RecordedModelRequest[];
  enqueue(...steps: ModelStep[]): void;
  /** Queued steps not yet played. */
  pendingSteps(): number;
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedModelRequest[]>;
  /** Closes the server and every open connection (hanging requests included). */
  stop(): Promise<void>;
}

export async function startScriptedModel(options: ScriptedModelOptions = {}): Promise<ScriptedModel> {
  const queue: ModelStep[] = [...(options.script ?? [])];
  const log = new RequestLog<RecordedModelRequest>();
  const models = options.models ?? ['scripted-model'];
  let completions = 0;
  let toolCalls = 0;

  const chooseStep = async (request: ChatCompletionRequest): Promise<ModelStep | undefined> =>
    queue.shift() ?? (await options.respond?.(request));

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const recorded = await recordRequest(req);
    const record = (outcome: ModelOutcome, step?: ModelStep): void =>
      log.add(step ? { ...recorded, outcome, step } : { ...recorded, outcome });

    if (options.apiKey !== undefined && recorded.headers['authorization'] !== `Bearer ${options.apiKey}`) {
      record('unauthorized');
      return sendJson(
        res,
        401,
        errorBody('Incorrect API key provided (scripted model)', 'invalid_request_error', 'invalid_api_key'),
      );
    }
    if (recorded.method === 'GET' && recorded.path === '/v1/models') {
      record('models');
      const created = Math.floor(Date.now() / 1000);
      return sendJson(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', created, owned_by: 'agentmesh-testkit' })),
      });
    }
    const chatPath = recorded.path.endsWith('/chat/completions');
    if (recorded.method !== 'POST' || !(chatPath || options.anyPath === true)) {
      record('not_found');
      return sendJson(
        res,
        404,
        errorBody(
          `No route ${recorded.method} ${recorded.path} on the scripted model`,
          'invalid_request_error',
          'not_found',
        ),
      );
    }
    const problem = chatPath ? chatRequestProblem(recorded) : undefined;
    if (problem) {
      record('invalid_request');
      return sendJson(res, 400, errorBody(problem, 'invalid_request_error', null));
    }
    const request = { ...recorded, body: recorded.body as ChatRequestBody };

    let step: ModelStep | undefined;
    try {
      step = await chooseStep(request);
    } catch (error) {
      record('respond_failed');
      const reason = error instanceof Error ? error.message : String(error);
      return sendJson(
        res,
        500,
        errorBody(`scripted model: respond function threw: ${reason}`, 'server_error', 'respond_failed'),
      );
    }
    if (!step) {
      record('script_exhausted');
      return sendJson(
        res,
        500,
        errorBody(
          `scripted model: script exhausted — no step left for request #${log.entries.length + 1} and no respond function answered`,
          'server_error',
          'script_exhausted',
        ),
      );
    }
    record(isFault(step) ? step.fault : isRaw(step) ? 'raw' : 'reply', step);

    completions += 1;
    await writeStep(res, step, {
      request: request.body,
      identity: {
        id: `chatcmpl-scripted-${completions}`,
        created: Math.floor(Date.now() / 1000),
        model:
          (!isFault(step) && !isRaw(step) && step.model) ||
          request.body.model ||
          models[0] ||
          'scripted-model',
      },
      nextToolCallId: () => `call_${(toolCalls += 1)}`,
      signal: gone.signal,
    });
  };

  const server = await startLoopbackServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // A bug in the test kit or a broken client: answer if we still can, never crash the test run.
      if (!res.headersSent) {
        const reason = error instanceof Error ? error.message : String(error);
        sendJson(res, 500, errorBody(`scripted model failed: ${reason}`, 'server_error', null));
      } else {
        res.destroy();
      }
    });
  });

  return {
    baseUrl: `${server.origin}/v1`,
    requests: log.entries,
    enqueue: (...steps) => {
      queue.push(...steps);
    },
    pendingSteps: () => queue.length,
    waitForRequests: (count, timeoutMs) => log.waitForCount(count, timeoutMs),
    stop: () => server.stop(),
  };
}

function chatRequestProblem(request: RecordedRequest): string | undefined {
  if (request.bodyParseError) return `request body is not valid JSON: ${request.bodyParseError}`;
  const body = request.body as Partial<ChatRequestBody> | undefined;
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return 'request body must be a JSON object (content-type application/json)';
  }
  if (!Array.isArray(body.messages)) return '`messages` must be an array';
  if (body.stream !== undefined && typeof body.stream !== 'boolean') return '`stream` must be a boolean';
  return undefined;
}
