/**
 * What every chaos task does, deterministically per task so its answer is known in advance: the model
 * first calls the `book` tool (arguments naming the task and the call), then streams a fixed answer in
 * several chunks. The tool API is idempotent by key: the same key gets the same booking back, and
 * every call is recorded, so repeats can be counted per key.
 */
import { createHash } from 'node:crypto';
import {
  startRecordingApi,
  startScriptedModel,
  type ChatCompletionRequest,
  type ModelStep,
  type RecordedApiRequest,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { sideEffectKey } from './ledger/ledger-checks.js';

export const BOOK_TOOL = {
  name: 'book',
  description: 'Books a slot for a task (a side effect: it must run once per call)',
  parameters: {
    type: 'object',
    properties: { trace: { type: 'string' }, call: { type: 'string' } },
    required: ['trace', 'call'],
  },
} as const;

const USER_TEXT = /^chaos task (\d+) trace ([0-9a-f]{32})$/;

export function userText(index: number, traceId: string): string {
  return `chaos task ${index} trace ${traceId}`;
}

/** The tool call id the model uses for task `index`: the same in every attempt, as a replayed turn would be. */
export function callIdOf(index: number): string {
  return `call_${index}`;
}

export function expectedAnswer(index: number): string {
  return `Task ${index} is booked. The slot is held, the receipt is filed, and the ledger counts this side effect exactly once.`;
}

function userIndex(request: ChatCompletionRequest): { index: number; traceId: string } | undefined {
  const user = request.body.messages.find((message) => message.role === 'user');
  const match = typeof user?.content === 'string' ? USER_TEXT.exec(user.content) : null;
  return match ? { index: Number(match[1]), traceId: match[2]! } : undefined;
}

export interface WorkloadTiming {
  modelLatencyMs: number;
  chunkDelayMs: number;
  toolDelayMs: number;
}

export function startChaosModel(timing: WorkloadTiming): Promise<ScriptedModel> {
  return startScriptedModel({
    respond: (request): ModelStep | undefined => {
      const task = userIndex(request);
      if (!task) return undefined;
      if (request.body.messages.at(-1)?.role === 'tool') {
        return {
          content: expectedAnswer(task.index),
          chunkSize: 12,
          chunkDelayMs: timing.chunkDelayMs,
          latencyMs: timing.modelLatencyMs,
        };
      }
      const call = callIdOf(task.index);
      return {
        toolCalls: [{ id: call, name: BOOK_TOOL.name, arguments: { trace: task.traceId, call } }],
        latencyMs: timing.modelLatencyMs,
      };
    },
  });
}

/**
 * The side-effect key of a recorded call: its `Idempotency-Key` header (`<trace_id>:<call_id>`), or,
 * from an executor that does not send one yet, the same key built from the call's arguments.
 */
export function sideEffectKeyOf(request: RecordedApiRequest): string {
  const header = request.headers['idempotency-key'];
  if (typeof header === 'string' && header !== '') return header;
  const { trace, call } = request.query;
  return sideEffectKey(String(trace ?? '?'), String(call ?? '?'));
}

export function startBookingApi(timing: WorkloadTiming): Promise<RecordingApi> {
  return startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/book',
        delayMs: timing.toolDelayMs,
        // Idempotent: the booking is a function of the key, so a repeat gets the first answer again.
        reply: (request) => {
          const key = sideEffectKeyOf(request as RecordedApiRequest);
          const booking = createHash('sha256').update(key).digest('hex').slice(0, 12);
          return { status: 200, body: { booking: `B-${booking}`, key } };
        },
      },
    ],
  });
}

/** Calls the tool API received, by side-effect key (every request is recorded on arrival). */
export function callsByKey(api: RecordingApi): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of api.requests) {
    if (request.path !== '/book') continue;
    const key = sideEffectKeyOf(request);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}
