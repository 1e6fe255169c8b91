// Dead letters: tasks that ran out of deliveries. The executor stores one per task in MESH_DEAD_LETTERS
// (`mesh.dead.<account>.<trace_id>`), and the gateway's admin API (`/v1/admin/dead-letters`) lists, shows,
// re-drives and drops them. A dead letter carries what a re-drive needs to submit the task again (account,
// workflow, user, input) and never the task's runtime_config: no vault, sealed or not, reaches the stream,
// and a re-drive is assembled afresh, with the account's current credentials.
import { z } from 'zod';
import { ErrorCodeSchema } from './errors.js';
import { IsoDateTime, UserId, WorkflowId } from './ids.js';
import { AccountId } from './names.js';
import { AccountType, TaskInput, TaskLimits } from './task.js';
import { TraceId } from './trace-id.js';
import { SubmitTaskReply } from './gateway.js';

/** Who found the task dead: the executor on its last delivery, or the MAX_DELIVERIES advisory listener. */
export const DeadLetterSource = z.enum(['executor', 'advisory']);
export type DeadLetterSource = z.infer<typeof DeadLetterSource>;

export const DeadLetterReason = z.object({ code: ErrorCodeSchema, message: z.string() });
export type DeadLetterReason = z.infer<typeof DeadLetterReason>;

/** Where a re-driven dead letter went: the task submitted in its place. */
export const DeadLetterRedrive = z.object({ trace_id: TraceId, redriven_at: IsoDateTime });

/** A dead letter as stored in MESH_DEAD_LETTERS. Strict: nothing else (a vault) can ride along. */
export const DeadLetter = z.strictObject({
  trace_id: TraceId,
  account_id: AccountId,
  account_type: AccountType.optional(),
  workflow_id: WorkflowId,
  user_id: UserId,
  submitted_at: IsoDateTime.optional(),
  reason: DeadLetterReason,
  /** Deliveries the task got (JetStream's delivery count when it was found dead). */
  attempts: z.int().nonnegative(),
  dead_at: IsoDateTime,
  source: DeadLetterSource,
  /** The durable consumer that ran out of deliveries. */
  consumer: z.string().min(1).optional(),
  input: TaskInput,
  limits: TaskLimits.optional(),
  /** Set once it was re-driven; a re-driven letter is kept (with the link) until dropped or expired. */
  redriven: DeadLetterRedrive.optional(),
});
export type DeadLetter = z.infer<typeof DeadLetter>;

/** What the admin API shows of a task's input: its shape, not its content. */
export const DeadLetterInputSummary = z.object({
  message_count: z.int().nonnegative(),
  /** The last user message's text, cut to 200 characters. */
  last_user_message: z.string().optional(),
  variable_names: z.array(z.string()),
});
export type DeadLetterInputSummary = z.infer<typeof DeadLetterInputSummary>;

/** `GET /v1/admin/dead-letters[/{trace_id}]`: one dead letter as the admin API shows it. */
export const DeadLetterView = DeadLetter.omit({ input: true, limits: true }).extend({
  input_summary: DeadLetterInputSummary,
});
export type DeadLetterView = z.infer<typeof DeadLetterView>;

const LAST_USER_MESSAGE_CHARS = 200;

/** The admin view of a stored dead letter. */
export function deadLetterView(letter: DeadLetter): DeadLetterView {
  const { input, limits: _limits, ...rest } = letter;
  const lastUser = [...input.messages].reverse().find((message) => message.role === 'user');
  const text =
    lastUser === undefined
      ? undefined
      : typeof lastUser.content === 'string'
        ? lastUser.content
        : lastUser.content
            .map((part) => ('text' in part && typeof part.text === 'string' ? part.text : ''))
            .join('');
  return {
    ...rest,
    input_summary: {
      message_count: input.messages.length,
      ...(text === undefined ? {} : { last_user_message: text.slice(0, LAST_USER_MESSAGE_CHARS) }),
      variable_names: Object.keys(input.variables),
    },
  };
}

export const DEAD_LETTER_LIST_MAX = 500;
export const DEAD_LETTER_LIST_DEFAULT = 100;

/** `GET /v1/admin/dead-letters` query: an account admin sees its account's letters only. */
export const DeadLetterListQuery = z.object({
  workflow_id: WorkflowId.optional(),
  limit: z.coerce.number().int().min(1).max(DEAD_LETTER_LIST_MAX).default(DEAD_LETTER_LIST_DEFAULT),
});
export type DeadLetterListQuery = z.infer<typeof DeadLetterListQuery>;

/**
 * `GET /v1/admin/dead-letters`: newest first. `skipped_malformed`: messages on the letters' subjects that
 * do not fit the schema, left out (absent from gateways of before it was counted).
 */
export const DeadLetterList = z.object({
  dead_letters: z.array(DeadLetterView),
  skipped_malformed: z.number().int().min(0).optional(),
});
export type DeadLetterList = z.infer<typeof DeadLetterList>;

/** `POST /v1/admin/dead-letters/{trace_id}/redrive`: the new task, and the dead one it replaces. */
export const DeadLetterRedriveReply = SubmitTaskReply.extend({ redriven_from: TraceId });
export type DeadLetterRedriveReply = z.infer<typeof DeadLetterRedriveReply>;
