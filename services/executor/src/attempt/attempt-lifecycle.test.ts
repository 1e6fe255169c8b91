import { EventStreamConflictError } from '@agentmesh/bus';
import { ErrorCode } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import type { LoopOutcome } from '../agent-loop.js';
import type { ApprovalSettlement } from '../approval/approval-settlement.js';
import { StatusConflict } from '../attempt-status.js';
import { TaskAbort } from '../task-abort.js';
import {
  AttemptDisposition,
  AttemptEnd,
  AttemptState,
  EndingCause,
  dispositionOf,
  fromChecked,
  fromDelivered,
  fromEnding,
  fromRunning,
  fromStarting,
  type CheckedFacts,
  type Step,
  type StartingFacts,
} from './attempt-lifecycle.js';

/** A fact that must not be asked: the conditions before it decided. */
function unasked(name: string): () => never {
  return () => {
    throw new Error(`${name} was asked after an earlier condition decided`);
  };
}

/** The code of the error the step ends the task with. */
function endingCode(step: Step): { cause: EndingCause; code: string | undefined } | undefined {
  if (!('ending' in step)) return undefined;
  const { cause, outcome } = step.ending;
  return { cause, code: outcome.type === 'error' ? outcome.data.code : undefined };
}

const done: LoopOutcome = {
  type: 'done',
  data: {
    message: 'hi',
    steps: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    duration_ms: 1,
  },
};
const failed: LoopOutcome = {
  type: 'error',
  data: { code: ErrorCode.CANCELLED, message: 'aborted', retryable: false },
};

describe('delivered', () => {
  it('when the terminal event is stored, the attempt ends ENDED_ALREADY without asking for a live attempt', async () => {
    const step = await fromDelivered({ terminalStored: true, liveAttemptElsewhere: unasked('live attempt') });
    expect(step).toEqual({ end: AttemptEnd.ENDED_ALREADY });
  });

  it('when another live attempt runs the task, the delivery is left to it', async () => {
    const step = await fromDelivered({ terminalStored: false, liveAttemptElsewhere: async () => true });
    expect(step).toEqual({ end: AttemptEnd.LEFT_TO_LIVE_ATTEMPT });
  });

  it('when neither, the attempt is checked', async () => {
    const step = await fromDelivered({ terminalStored: false, liveAttemptElsewhere: () => false });
    expect(step).toEqual({ to: AttemptState.CHECKED });
  });
});

describe('checked', () => {
  const facts = (change: Partial<CheckedFacts>): CheckedFacts => ({
    attempt: 1,
    delivered: 1,
    workAttempts: 1,
    maxDeliver: 3,
    maxDeliveries: 7,
    vaultKey: { kid: 'k1', held: true },
    cancelRequested: unasked('cancel'),
    approvals: async () => undefined,
    ...change,
  });

  it('when the work attempts pass MAX_DELIVER, it ends MAX_DELIVER_EXCEEDED before looking at the key or approvals', async () => {
    const step = await fromChecked(
      facts({ workAttempts: 4, vaultKey: { kid: 'k1', held: false }, approvals: unasked('approvals') }),
    );
    expect(endingCode(step)).toEqual({
      cause: EndingCause.OUT_OF_ATTEMPTS,
      code: ErrorCode.MAX_DELIVER_EXCEEDED,
    });
    expect('ending' in step && step.ending.outcome).toMatchObject({
      data: { message: expect.stringContaining('attempted 4 times') },
    });
  });

  it("when the delivery reaches the consumer's limit, it ends MAX_DELIVER_EXCEEDED naming that limit", async () => {
    const step = await fromChecked(facts({ delivered: 7, workAttempts: 2, approvals: unasked('approvals') }));
    expect(endingCode(step)?.code).toBe(ErrorCode.MAX_DELIVER_EXCEEDED);
    expect('ending' in step && step.ending.outcome).toMatchObject({
      data: { message: expect.stringContaining("consumer's limit, 7") },
    });
  });

  it('when the vault key is missing and a cancel was requested, it ends CANCELLED', async () => {
    const step = await fromChecked(
      facts({
        vaultKey: { kid: 'k1', held: false },
        cancelRequested: async () => true,
        approvals: unasked('approvals'),
      }),
    );
    expect(endingCode(step)).toEqual({ cause: EndingCause.NO_VAULT_KEY, code: ErrorCode.CANCELLED });
  });

  it('when the vault key is missing and deliveries are left, it is handed back later', async () => {
    const step = await fromChecked(
      facts({ attempt: 2, vaultKey: { kid: 'k1', held: false }, cancelRequested: () => false }),
    );
    expect(step).toEqual({ end: AttemptEnd.HANDED_BACK_LATER });
  });

  it('when the vault key is missing and no delivery is left, it ends INTERNAL naming the key', async () => {
    const step = await fromChecked(
      facts({
        attempt: 3,
        workAttempts: 3,
        vaultKey: { kid: 'k1', held: false },
        cancelRequested: () => false,
      }),
    );
    expect(endingCode(step)).toEqual({ cause: EndingCause.NO_VAULT_KEY, code: ErrorCode.INTERNAL });
    expect('ending' in step && step.ending.outcome).toMatchObject({
      data: { message: expect.stringContaining('"k1"') },
    });
  });

  it('when approvals are still pending, the attempt ends PARKED', async () => {
    const step = await fromChecked(facts({ approvals: async () => ({ kind: 'waiting' }) }));
    expect(step).toEqual({ end: AttemptEnd.PARKED });
  });

  it('when approvals ended the task, it ends with their outcome and releases the park once stored', async () => {
    const release = async () => {};
    const settlement: ApprovalSettlement = { kind: 'ended', outcome: failed, release };
    const step = await fromChecked(facts({ approvals: async () => settlement }));
    expect(step).toEqual({
      to: AttemptState.ENDING,
      ending: { cause: EndingCause.APPROVALS, outcome: failed, afterStored: release },
    });
  });

  it('when approvals were decided, or none are awaited, the attempt starts', async () => {
    expect(await fromChecked(facts({ approvals: async () => ({ kind: 'decided', events: [] }) }))).toEqual({
      to: AttemptState.STARTING,
    });
    expect(await fromChecked(facts({}))).toEqual({ to: AttemptState.STARTING });
  });
});

describe('starting', () => {
  const facts = (change: Partial<StartingFacts>): StartingFacts => ({
    conflict: undefined,
    cancelRequested: false,
    unsupportedModel: undefined,
    vaultRefusal: () => undefined,
    ...change,
  });

  it('when the `running` write finds the task ended, it ends ENDED_ALREADY without opening the vault', async () => {
    const step = await fromStarting(
      facts({ conflict: StatusConflict.ENDED, cancelRequested: true, vaultRefusal: unasked('vault') }),
    );
    expect(step).toEqual({ end: AttemptEnd.ENDED_ALREADY });
  });

  it('when another live instance holds the record, it is superseded without repairing the status', async () => {
    const step = await fromStarting(facts({ conflict: StatusConflict.HELD, vaultRefusal: unasked('vault') }));
    expect(step).toEqual({ end: AttemptEnd.SUPERSEDED });
  });

  it('when a newer attempt wrote the record, it is superseded and repairs the status', async () => {
    const step = await fromStarting(
      facts({ conflict: StatusConflict.SUPERSEDED, vaultRefusal: unasked('vault') }),
    );
    expect(step).toEqual({ end: AttemptEnd.SUPERSEDED, repairStatus: true });
  });

  it('when a cancel was requested, it ends CANCELLED before checking the model or the vault', async () => {
    const step = await fromStarting(
      facts({ cancelRequested: true, unsupportedModel: 'no', vaultRefusal: unasked('vault') }),
    );
    expect(endingCode(step)).toEqual({ cause: EndingCause.REFUSED, code: ErrorCode.CANCELLED });
  });

  it('when the model is not spoken here, it ends INVALID_REQUEST without opening the vault', async () => {
    const step = await fromStarting(
      facts({ unsupportedModel: 'model api "x"', vaultRefusal: unasked('vault') }),
    );
    expect(endingCode(step)).toEqual({ cause: EndingCause.REFUSED, code: ErrorCode.INVALID_REQUEST });
  });

  it('when the vault refuses to open, it ends with the refusal', async () => {
    const refusal: LoopOutcome = {
      type: 'error',
      data: { code: ErrorCode.TASK_BINDING_MISMATCH, message: 'not sealed for it', retryable: false },
    };
    const step = await fromStarting(facts({ vaultRefusal: () => refusal }));
    expect(step).toEqual({
      to: AttemptState.ENDING,
      ending: { cause: EndingCause.REFUSED, outcome: refusal },
    });
  });

  it('when nothing refuses it, the attempt runs', async () => {
    expect(await fromStarting(facts({}))).toEqual({ to: AttemptState.RUNNING });
  });
});

describe('running', () => {
  const aborted = (how: (abort: TaskAbort) => void) => {
    const abort = new TaskAbort();
    how(abort);
    abort.dispose();
    return abort.reason;
  };

  it('when the model asked for calls needing approval, the attempt ends PARKED', () => {
    const step = fromRunning({ result: { type: 'parked', data: { held: [] } }, abort: undefined });
    expect(step).toEqual({ end: AttemptEnd.PARKED });
  });

  it('when the executor is stopping, the task is handed back', () => {
    const step = fromRunning({ result: failed, abort: aborted((abort) => abort.handBack()) });
    expect(step).toEqual({ end: AttemptEnd.HANDED_BACK });
  });

  it('when another attempt took the task over, it is left to it and the status repaired', () => {
    const step = fromRunning({ result: failed, abort: aborted((abort) => abort.loseOwnership()) });
    expect(step).toEqual({ end: AttemptEnd.TAKEN_OVER, repairStatus: true });
  });

  it('when another executor wrote the event stream, the attempt is superseded and the status repaired', () => {
    const conflict = new EventStreamConflictError('t1');
    const step = fromRunning({ result: failed, abort: aborted((abort) => abort.loseEventStream(conflict)) });
    expect(step).toEqual({ end: AttemptEnd.SUPERSEDED, repairStatus: true });
  });

  it('when the event stream failed otherwise, the attempt fails with that cause', () => {
    const cause = new Error('nats gone');
    const step = fromRunning({ result: failed, abort: aborted((abort) => abort.loseEventStream(cause)) });
    expect(step).toEqual({ failed: cause });
  });

  it('when a cancel aborted it, the task ends with the loop outcome', () => {
    const step = fromRunning({ result: failed, abort: aborted((abort) => abort.cancel()) });
    expect(step).toEqual({
      to: AttemptState.ENDING,
      ending: { cause: EndingCause.ANSWERED, outcome: failed },
    });
  });

  it('when the loop answered although the executor began stopping, the answer still ends the task', () => {
    const step = fromRunning({ result: done, abort: aborted((abort) => abort.handBack()) });
    expect(step).toEqual({ to: AttemptState.ENDING, ending: { cause: EndingCause.ANSWERED, outcome: done } });
  });
});

describe('ending', () => {
  it('when the terminal event is stored, the attempt has FINISHED', () => {
    expect(fromEnding({ cause: EndingCause.ANSWERED, stored: true })).toEqual({ end: AttemptEnd.FINISHED });
  });

  it('when the terminal event of a task out of attempts is stored, it is DEAD_LETTERED', () => {
    expect(fromEnding({ cause: EndingCause.OUT_OF_ATTEMPTS, stored: true })).toEqual({
      end: AttemptEnd.DEAD_LETTERED,
    });
  });

  it("when another executor wrote the task's events, the attempt is superseded and the status repaired", () => {
    expect(fromEnding({ cause: EndingCause.REFUSED, stored: false })).toEqual({
      end: AttemptEnd.SUPERSEDED,
      repairStatus: true,
    });
  });
});

describe('dispositions', () => {
  it('each end gives its message what the consumer expects', () => {
    expect(dispositionOf(AttemptEnd.ENDED_ALREADY, 2)).toBe(AttemptDisposition.ACK);
    expect(dispositionOf(AttemptEnd.PARKED, 2)).toBe(AttemptDisposition.ACK);
    expect(dispositionOf(AttemptEnd.FINISHED, 2)).toBe(AttemptDisposition.ACK);
    expect(dispositionOf(AttemptEnd.DEAD_LETTERED, 2)).toBe(AttemptDisposition.TERM);
    expect(dispositionOf(AttemptEnd.LEFT_TO_LIVE_ATTEMPT, 2)).toBe(AttemptDisposition.ABANDON);
    expect(dispositionOf(AttemptEnd.TAKEN_OVER, 1)).toBe(AttemptDisposition.ABANDON);
    expect(dispositionOf(AttemptEnd.HANDED_BACK, 2)).toBe(AttemptDisposition.HAND_BACK);
    expect(dispositionOf(AttemptEnd.HANDED_BACK_LATER, 2)).toBe(AttemptDisposition.HAND_BACK_LATER);
  });

  it('when superseded, a redelivery leaves the message to the owner but a first delivery hands it back', () => {
    expect(dispositionOf(AttemptEnd.SUPERSEDED, 2)).toBe(AttemptDisposition.ABANDON);
    expect(dispositionOf(AttemptEnd.SUPERSEDED, 1)).toBe(AttemptDisposition.HAND_BACK);
  });
});
