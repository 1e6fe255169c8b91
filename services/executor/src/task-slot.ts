/**
 * A task's slot on this executor, which the task lends out while it waits on work that needs a slot of its
 * own: a parent waiting for its sub-task. If parents kept their slots, parents holding every slot of the
 * mesh would leave their sub-tasks none to run in, and each tree would wait until its deadline. A lent
 * slot goes to the pull loops at once; the task takes it back when its wait ends, even when that puts the
 * instance over its slots for a while (the loops then pull nothing until enough tasks end).
 *
 * Lending is bounded by the ledger (MAX_WAITING_TASKS): a task that finds the bound reached keeps its slot
 * for that wait, as every parent did before.
 */

export interface TaskSlot {
  /** Runs `wait` with this task's slot lent out where the ledger allows. One task's waits may overlap. */
  whileWaiting<T>(wait: () => Promise<T>): Promise<T>;
}

/** The instance's count of lent slots (task-consumer.ts). */
export interface SlotLedger {
  /** Counts one more slot lent and hands it to the pull loops; false when the bound is reached. */
  lend(): boolean;
  /** The lent slot is the task's again. */
  reclaim(): void;
}

export class LendableTaskSlot implements TaskSlot {
  /** Waits of this task under way: a model may call several agents at once; the slot is lent once. */
  #waits = 0;
  #lent = false;

  constructor(private readonly ledger: SlotLedger) {}

  async whileWaiting<T>(wait: () => Promise<T>): Promise<T> {
    if (this.#waits++ === 0) this.#lent = this.ledger.lend();
    try {
      return await wait();
    } finally {
      if (--this.#waits === 0 && this.#lent) {
        this.#lent = false;
        this.ledger.reclaim();
      }
    }
  }
}

/** The slot of a task run with nothing to lend it to (a runner tested alone): waits keep it. */
export const KEPT_SLOT: TaskSlot = { whileWaiting: (wait) => wait() };
