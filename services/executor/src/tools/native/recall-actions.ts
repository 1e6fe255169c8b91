/**
 * `recall_actions`: asks the recall service (seed 004) which actions an ontology object offers. The
 * request goes to `mesh.recall.actions` with the task's account in the seed's `x-account-id` /
 * `x-account-type` headers and the current trace context; the answer, `{_dynamic_tools: [...]}`, goes back
 * to the model, and the loop makes those tools callable from the next step on.
 */
import { ErrorCode, Subjects, UniqueIdentity } from '@agentmesh/protocol';
import { injectTraceContext } from '@agentmesh/runtime';
import { headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { toolFailure } from '../index.js';
import { defineNativeTool, type NativeToolImplementation } from './native-tool.js';
import { recallReplyOutcome, recallUnansweredOutcome } from './recall-reply.js';

export const RECALL_ACTIONS_CLASS = 'RecallActionsTool';

/**
 * Seed 004's examples call every account `user`; a task whose submitter gave no account type is asked
 * about as one, since recall refuses a request without the header.
 */
export const DEFAULT_ACCOUNT_TYPE = 'user';

const ACCOUNT_ID_HEADER = 'x-account-id';
const ACCOUNT_TYPE_HEADER = 'x-account-type';

/** Objects one call may name; recall asks ontology-query once per object. */
export const MAX_IDENTITIES_PER_CALL = 20;

export const RecallActionsInput = z
  .strictObject({
    kn_id: z.string().min(1).describe('Id of the knowledge network the object belongs to'),
    at_id: z.string().min(1).describe('Id of the action type to recall, e.g. generate_treatment_plan'),
    unique_identity: UniqueIdentity.optional().describe(
      'The object\'s primary key as name → value, e.g. {"disease_id": "disease_000001"}. Give this or unique_identities.',
    ),
    unique_identities: z
      .array(UniqueIdentity)
      .min(1)
      .max(MAX_IDENTITIES_PER_CALL)
      .optional()
      .describe(
        'Several objects at once, each a primary key as name → value. The answer holds the tools of all of ' +
          'them (one per distinct action) and, under failures, each object that could not be recalled.',
      ),
  })
  .superRefine((input, ctx) => {
    if ((input.unique_identity === undefined) === (input.unique_identities === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['unique_identity'],
        message: 'give either unique_identity or unique_identities (exactly one of them)',
      });
    }
  });

export interface RecallActionsOptions {
  readonly nc: NatsConnection;
  /** How long to wait for the recall service's answer. */
  readonly timeoutMs: number;
}

export function recallActionsTool(options: RecallActionsOptions): NativeToolImplementation {
  return defineNativeTool({
    name: 'recall_actions',
    className: RECALL_ACTIONS_CLASS,
    description:
      'Finds the actions an object of a knowledge network offers for an action type. Each action found ' +
      'becomes a tool you can call from your next step on; the answer lists them under _dynamic_tools.',
    input: RecallActionsInput,
    async run(input, { account, signal }) {
      const headers = natsHeaders();
      headers.set(ACCOUNT_ID_HEADER, account.id);
      headers.set(ACCOUNT_TYPE_HEADER, account.type ?? DEFAULT_ACCOUNT_TYPE);
      injectTraceContext(headers);
      const request = options.nc.request(Subjects.RECALL_ACTIONS, JSON.stringify(input), {
        timeout: options.timeoutMs,
        headers,
      });
      let reply: Msg;
      try {
        reply = await untilAborted(request, signal);
      } catch (error) {
        if (signal.aborted)
          return toolFailure(ErrorCode.CANCELLED, 'the call to recall_actions was cancelled');
        const outcome = recallUnansweredOutcome(error, options.timeoutMs);
        if (outcome === undefined) throw error;
        return outcome;
      }
      return recallReplyOutcome(reply);
    },
  });
}

/** `promise`, or a rejection as soon as `signal` aborts (the request itself times out on its own). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise
      .finally(() => signal.removeEventListener('abort', onAbort))
      .then(resolve, (error: unknown) => reject(error instanceof Error ? error : new Error(String(error))));
  });
}
