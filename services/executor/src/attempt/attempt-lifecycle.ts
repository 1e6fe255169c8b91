/**
 * The life of one attempt of one task, as a table: the states an attempt goes through and, for each, the
 * conditions (asked in this order) that decide where it goes next. Pure: the runner (task-runner.ts) does
 * each state's work (reads, writes, the agent loop) and asks these functions where to go. A fact that costs
 * a read is a function, asked only when the conditions before it did not decide.
 *
 *   state      condition, in order                                    next
 *   delivered  the task's terminal event is stored                    ENDED_ALREADY (ack)
 *              another live attempt runs it (a redelivery asks)       LEFT_TO_LIVE_ATTEMPT (abandon)
 *              otherwise                                              checked
 *   checked    over MAX_DELIVER work attempts, or the last delivery   ending MAX_DELIVER_EXCEEDED
 *              no vault key here, cancel requested                    ending CANCELLED
 *              no vault key here, deliveries left                     HANDED_BACK_LATER (nak after a pause)
 *              no vault key here, none left                           ending INTERNAL
 *              approvals awaited, still pending                       PARKED (ack)
 *              approvals awaited, expired, cancelled or lost          ending APPROVAL_TIMEOUT, CANCELLED, INTERNAL
 *              otherwise (decisions written, or none awaited)         starting
 *   starting   `running` write: the task has ended                    ENDED_ALREADY (ack)
 *              `running` write: another live instance runs it         SUPERSEDED
 *              `running` write: a newer attempt's record              SUPERSEDED, status repaired
 *              cancel requested                                       ending CANCELLED
 *              a model API or provider this executor lacks            ending INVALID_REQUEST
 *              the vault refuses to open                              ending TASK_BINDING_MISMATCH or INTERNAL
 *              otherwise                                              running
 *   running    the model asked for calls needing approval             PARKED (ack)
 *              aborted: the executor is stopping                      HANDED_BACK (nak)
 *              aborted: another attempt took the task over            TAKEN_OVER (abandon), status repaired
 *              aborted: another executor wrote the event stream       SUPERSEDED, status repaired
 *              aborted: the event stream failed otherwise             failed (thrown: nak after a pause)
 *              otherwise (done, or an error that ends the task)       ending
 *   ending     the terminal event is stored, out of attempts          DEAD_LETTERED (term)
 *              the terminal event is stored                           FINISHED (ack)
 *              another executor wrote the task's events               SUPERSEDED, status repaired
 *
 * SUPERSEDED leaves a redelivery's message to the attempt that owns the task (abandon), but hands a first
 * delivery back (nak): see `afterConflict`.
 */
import { EventStreamConflictError } from '@agentmesh/bus';
import { ErrorCode } from '@agentmesh/protocol';
import type { LoopOutcome, LoopResult } from '../agent-loop.js';
import type { ApprovalSettlement } from '../approval/approval-settlement.js';
import { StatusConflict } from '../attempt-status.js';
import { AbortCause, type TaskAbortReason } from '../task-abort.js';

/** What the consumer does with the task's message once the attempt is over. */
export const AttemptDisposition = {
  /** The task has its terminal event. */
  ACK: 'ack',
  /** The task ended without running and must never be delivered again. */
  TERM: 'term',
  /** The executor is stopping: the task goes back to the queue for another instance. */
  HAND_BACK: 'hand_back',
  /**
   * No key of this executor opens the task's vault (a key rotation under way): the task goes back to the
   * queue after a pause, for an executor that holds the key.
   */
  HAND_BACK_LATER: 'hand_back_later',
  /** Another executor writes this task's events now: leave the message to it. */
  ABANDON: 'abandon',
} as const;
export type AttemptDisposition = (typeof AttemptDisposition)[keyof typeof AttemptDisposition];

/** The states an attempt is in while it still has work to do. */
export const AttemptState = {
  /** Its event stream is open (continuing after earlier attempts' events). */
  DELIVERED: 'delivered',
  /** The earlier attempts' events are read and the attempt numbered: what they left is known. */
  CHECKED: 'checked',
  /** The task is this attempt's to run: its `running` status is written, its vault opened. */
  STARTING: 'starting',
  /** The agent loop runs. */
  RUNNING: 'running',
  /** The terminal event is written, then the final status. */
  ENDING: 'ending',
} as const;
export type AttemptState = (typeof AttemptState)[keyof typeof AttemptState];

/** Where an attempt stops. */
export const AttemptEnd = {
  /** The task had ended before this attempt did anything. */
  ENDED_ALREADY: 'ended_already',
  /** Another live attempt runs the task (the server redelivered it past a stall). */
  LEFT_TO_LIVE_ATTEMPT: 'left_to_live_attempt',
  /** No vault key for the task here: back to the queue after a pause. */
  HANDED_BACK_LATER: 'handed_back_later',
  /** The task waits for approval, holding no executor slot. */
  PARKED: 'parked',
  /** The executor is stopping: back to the queue at once. */
  HANDED_BACK: 'handed_back',
  /** Another attempt or executor owns the task's record or events now. */
  SUPERSEDED: 'superseded',
  /** The executor stood still and another attempt took the task over. */
  TAKEN_OVER: 'taken_over',
  /** The attempt wrote the task's terminal event. */
  FINISHED: 'finished',
  /** The attempt wrote MAX_DELIVER_EXCEEDED: the message must not come back. */
  DEAD_LETTERED: 'dead_lettered',
} as const;
export type AttemptEnd = (typeof AttemptEnd)[keyof typeof AttemptEnd];

/** Why an attempt writes a terminal event; each cause ends the same way but for what it counts. */
export const EndingCause = {
  /** Over MAX_DELIVER work attempts or at the consumer's delivery limit (dead-lettered after). */
  OUT_OF_ATTEMPTS: 'out_of_attempts',
  /** The vault key is not here, and the task cancelled or out of deliveries for a holder. */
  NO_VAULT_KEY: 'no_vault_key',
  /** The approvals the task was parked for expired, were cancelled or lost. */
  APPROVALS: 'approvals',
  /** Refused after `running` was written: cancelled, an unknown model, a vault that will not open. */
  REFUSED: 'refused',
  /** The agent loop's outcome. */
  ANSWERED: 'answered',
} as const;
export type EndingCause = (typeof EndingCause)[keyof typeof EndingCause];

export interface Ending {
  readonly cause: EndingCause;
  readonly outcome: LoopOutcome;
  /** Done once the terminal event is stored (the parked entry of approvals that ended the task deleted). */
  readonly afterStored?: () => Promise<void>;
}

/** Where an attempt goes next. */
export type Step =
  | { readonly to: typeof AttemptState.CHECKED | typeof AttemptState.STARTING | typeof AttemptState.RUNNING }
  | { readonly to: typeof AttemptState.ENDING; readonly ending: Ending }
  /** `repairStatus`: on the way out, the status record is made to say what a stored terminal event says. */
  | { readonly end: AttemptEnd; readonly repairStatus?: true }
  /** Thrown to the consumer, which hands the message back after a pause. */
  | { readonly failed: unknown };

/** A fact that costs a read: asked for only when the conditions before it did not decide. */
export type Fact<T> = () => T | Promise<T>;

export interface DeliveredFacts {
  terminalStored: boolean;
  liveAttemptElsewhere: Fact<boolean>;
}

export async function fromDelivered(facts: DeliveredFacts): Promise<Step> {
  if (facts.terminalStored) return { end: AttemptEnd.ENDED_ALREADY };
  if (await facts.liveAttemptElsewhere()) return { end: AttemptEnd.LEFT_TO_LIVE_ATTEMPT };
  return { to: AttemptState.CHECKED };
}

export interface CheckedFacts {
  /** The attempt's number (renumbered past the log's). */
  attempt: number;
  /** JetStream's delivery count. */
  delivered: number;
  /** Distinct attempts that did work, this one included. */
  workAttempts: number;
  maxDeliver: number;
  /** The consumer's delivery limit. */
  maxDeliveries: number;
  /** The key id the task's vault is sealed for, and whether this executor holds it. */
  vaultKey: { kid: string; held: boolean };
  cancelRequested: Fact<boolean>;
  /** The approvals the task waits for, settled from its parked entry; undefined when it waits for none. */
  approvals: Fact<ApprovalSettlement | undefined>;
}

export async function fromChecked(facts: CheckedFacts): Promise<Step> {
  const { attempt, delivered, workAttempts, maxDeliver, maxDeliveries } = facts;
  if (workAttempts > maxDeliver || delivered >= maxDeliveries) {
    const message =
      workAttempts > maxDeliver
        ? `the task was attempted ${workAttempts} times without finishing (MAX_DELIVER ${maxDeliver})`
        : `the task was delivered ${delivered} times without finishing (the consumer's limit, ${maxDeliveries})`;
    return ending(EndingCause.OUT_OF_ATTEMPTS, failure(ErrorCode.MAX_DELIVER_EXCEEDED, message));
  }
  const { kid, held } = facts.vaultKey;
  if (!held) {
    // Not this executor's to run; a cancelled task is ended here, though, rather than passed around.
    if (await facts.cancelRequested()) {
      return ending(
        EndingCause.NO_VAULT_KEY,
        failure(ErrorCode.CANCELLED, 'the task was cancelled before it started'),
      );
    }
    if (attempt < maxDeliver) return { end: AttemptEnd.HANDED_BACK_LATER };
    return ending(
      EndingCause.NO_VAULT_KEY,
      failure(
        ErrorCode.INTERNAL,
        `no executor holds the vault key "${kid}" the task was sealed for (${attempt} deliveries); add it to VAULT_PRIVATE_KEYS`,
      ),
    );
  }
  const settled = await facts.approvals();
  if (settled?.kind === 'waiting') return { end: AttemptEnd.PARKED };
  if (settled?.kind === 'ended') {
    return {
      to: AttemptState.ENDING,
      ending: { cause: EndingCause.APPROVALS, outcome: settled.outcome, afterStored: settled.release },
    };
  }
  return { to: AttemptState.STARTING };
}

export interface StartingFacts {
  /** Why the `running` write was refused; undefined when it was written (or left alone for a cancel). */
  conflict: StatusConflict | undefined;
  /** Whether the record the write met carries a cancel request. */
  cancelRequested: boolean;
  /** Why the task's models cannot be spoken here; undefined when they can. */
  unsupportedModel: string | undefined;
  /** Opens the vault; the outcome the task ends with when it refuses, else undefined. */
  vaultRefusal: Fact<LoopOutcome | undefined>;
}

export async function fromStarting(facts: StartingFacts): Promise<Step> {
  switch (facts.conflict) {
    case StatusConflict.ENDED:
      return { end: AttemptEnd.ENDED_ALREADY };
    case StatusConflict.HELD:
      return { end: AttemptEnd.SUPERSEDED };
    case StatusConflict.SUPERSEDED:
      return { end: AttemptEnd.SUPERSEDED, repairStatus: true };
  }
  if (facts.cancelRequested) {
    return ending(
      EndingCause.REFUSED,
      failure(ErrorCode.CANCELLED, 'the task was cancelled before it started'),
    );
  }
  if (facts.unsupportedModel !== undefined) {
    return ending(EndingCause.REFUSED, failure(ErrorCode.INVALID_REQUEST, facts.unsupportedModel));
  }
  const refused = await facts.vaultRefusal();
  if (refused !== undefined) return ending(EndingCause.REFUSED, refused);
  return { to: AttemptState.RUNNING };
}

export interface RunningFacts {
  result: LoopResult;
  /** Why the attempt was aborted, if it was. */
  abort: TaskAbortReason | undefined;
}

export function fromRunning({ result, abort }: RunningFacts): Step {
  if (result.type === 'parked') return { end: AttemptEnd.PARKED };
  // An abort that ends the task (cancel, deadline) is the loop's outcome; the others end this attempt only.
  if (abort !== undefined && !abort.endsTask && result.type === 'error') {
    if (abort.kind === AbortCause.EXECUTOR_STOPPING) return { end: AttemptEnd.HANDED_BACK };
    // Its message is the newer attempt's now (or acked already).
    if (abort.kind === AbortCause.SUPERSEDED) return { end: AttemptEnd.TAKEN_OVER, repairStatus: true };
    if (abort.cause instanceof EventStreamConflictError)
      return { end: AttemptEnd.SUPERSEDED, repairStatus: true };
    return { failed: abort.cause ?? abort };
  }
  return ending(EndingCause.ANSWERED, result);
}

export interface EndingFacts {
  cause: EndingCause;
  /** Whether this attempt stored the terminal event (false: another executor owns the event stream). */
  stored: boolean;
}

export function fromEnding({ cause, stored }: EndingFacts): Step {
  if (!stored) return { end: AttemptEnd.SUPERSEDED, repairStatus: true };
  return { end: cause === EndingCause.OUT_OF_ATTEMPTS ? AttemptEnd.DEAD_LETTERED : AttemptEnd.FINISHED };
}

/** What the message gets when attempt `attempt` stops at `end`. */
export function dispositionOf(end: AttemptEnd, attempt: number): AttemptDisposition {
  switch (end) {
    case AttemptEnd.ENDED_ALREADY:
    case AttemptEnd.PARKED:
    case AttemptEnd.FINISHED:
      return AttemptDisposition.ACK;
    case AttemptEnd.DEAD_LETTERED:
      return AttemptDisposition.TERM;
    case AttemptEnd.LEFT_TO_LIVE_ATTEMPT:
    case AttemptEnd.TAKEN_OVER:
      return AttemptDisposition.ABANDON;
    case AttemptEnd.HANDED_BACK:
      return AttemptDisposition.HAND_BACK;
    case AttemptEnd.HANDED_BACK_LATER:
      return AttemptDisposition.HAND_BACK_LATER;
    case AttemptEnd.SUPERSEDED:
      return afterConflict(attempt);
  }
}

/**
 * What a message gets when its attempt found the task's events written by another: a redelivery leaves it
 * to the attempt that wrote them. A first delivery hands it back at once, though: its writer assumed an
 * empty stream without reading it (TaskEventWriter.first), and a delivery count of 1 does not prove that:
 * nats-server 2.9.10 was seen delivering a task again with a count of 1 after the executor that held it
 * was killed. Handed back, it comes again as delivery 2 and resumes from the events at once, instead of
 * after another ack_wait.
 */
export function afterConflict(attempt: number): AttemptDisposition {
  return attempt === 1 ? AttemptDisposition.HAND_BACK : AttemptDisposition.ABANDON;
}

/** JetStream's delivery limit for a given MAX_DELIVER when none is configured: room for deaths before work. */
export function deliveryBackstop(maxDeliver: number): number {
  return 2 * maxDeliver + 1;
}

function ending(cause: EndingCause, outcome: LoopOutcome): Step {
  return { to: AttemptState.ENDING, ending: { cause, outcome } };
}

export function failure(code: ErrorCode, message: string): LoopOutcome {
  return { type: 'error', data: { code, message, retryable: false } };
}
