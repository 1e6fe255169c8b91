import { describe, expect, it } from 'vitest';
import { LendableTaskSlot, type SlotLedger } from './task-slot.js';

/** A ledger with room for `room` lent slots, counting what it was told. */
function ledgerWithRoom(room: number): SlotLedger & { lent: number; lends: number } {
  const ledger = {
    lent: 0,
    lends: 0,
    lend: () => {
      if (ledger.lent >= room) return false;
      ledger.lent++;
      ledger.lends++;
      return true;
    },
    reclaim: () => {
      ledger.lent--;
    },
  };
  return ledger;
}

function deferred(): {
  promise: Promise<string>;
  resolve: (value: string) => void;
  reject: (error: Error) => void;
} {
  let resolve!: (value: string) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<string>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('a task lending its slot while it waits', () => {
  it('a wait lends the slot for its length and returns what it waited for', async () => {
    const ledger = ledgerWithRoom(1);
    const slot = new LendableTaskSlot(ledger);
    const sub = deferred();
    const waiting = slot.whileWaiting(() => sub.promise);
    expect(ledger.lent).toBe(1);
    sub.resolve('the sub-task answered');
    await expect(waiting).resolves.toBe('the sub-task answered');
    expect(ledger.lent).toBe(0);
  });

  it('when two calls of one task wait at once, the slot is lent once and comes back after the last', async () => {
    const ledger = ledgerWithRoom(5);
    const slot = new LendableTaskSlot(ledger);
    const first = deferred();
    const second = deferred();
    const waits = [slot.whileWaiting(() => first.promise), slot.whileWaiting(() => second.promise)];
    expect(ledger.lent).toBe(1);
    first.resolve('one');
    await waits[0];
    expect(ledger.lent).toBe(1);
    second.resolve('two');
    await waits[1];
    expect(ledger.lent).toBe(0);
    expect(ledger.lends).toBe(1);
  });

  it('a wait that fails gives the slot back and passes the failure on', async () => {
    const ledger = ledgerWithRoom(1);
    const slot = new LendableTaskSlot(ledger);
    const sub = deferred();
    const waiting = slot.whileWaiting(() => sub.promise);
    sub.reject(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
    expect(ledger.lent).toBe(0);
  });

  it('when the instance has lent all it may, the task keeps its slot and gives nothing back after', async () => {
    const ledger = ledgerWithRoom(1);
    const other = new LendableTaskSlot(ledger);
    const otherWait = deferred();
    const otherWaiting = other.whileWaiting(() => otherWait.promise);
    const slot = new LendableTaskSlot(ledger);
    const sub = deferred();
    const waiting = slot.whileWaiting(() => sub.promise);
    expect(ledger.lent).toBe(1);
    sub.resolve('kept');
    await waiting;
    // Only the other task's loan is outstanding; a reclaim here would have counted it back twice.
    expect(ledger.lent).toBe(1);
    otherWait.resolve('done');
    await otherWaiting;
    expect(ledger.lent).toBe(0);
  });
});
