/**
 * The end of an attempt that writes the task's terminal event: the event, then (once it is stored) the
 * task's spend added to its account's day beside the final status write, the sub-tasks of a task ending in
 * error cancelled, and the attempt's span and metrics closed. The one place a terminal event is written.
 */
import { EventStreamConflictError, type VersionedTaskStatus } from '@agentmesh/bus';
import type { AssembledTask, TerminalEvent } from '@agentmesh/protocol';
import type { Span } from '@opentelemetry/api';
import { addSpendToAccountDay } from '../budget/account-day.js';
import { pricesOf } from '../budget/model-prices.js';
import { TaskSpend } from '../budget/task-spend.js';
import type { TaskMetrics } from '../executor-metrics.js';
import { markFailed } from '../gen-ai-spans.js';
import type { ResumePoint } from '../resume/resume-point.js';
import type { TaskRunnerDependencies } from './runner-dependencies.js';
import type { AttemptStatusWrites } from './status-writes.js';

/** What records an attempt: its `invoke_agent` span and its metrics. */
export interface AttemptObservers {
  span: Span;
  metrics: TaskMetrics;
  /** Stops tracking the attempt as running (idempotent); absent for attempts never tracked. */
  untrack?: () => void;
  /** Calls of earlier attempts that started sub-tasks (`subtask_started` in the log). */
  subtaskCallIds?: ReadonlySet<string>;
}

export interface TerminalWrite {
  emit: () => Promise<TerminalEvent>;
  /** The task's spend (its earlier attempts' included), added to its account's day once the event is stored. */
  spend: TaskSpend;
  /** The status this attempt stored last, so the final one is written without reading first. */
  status?: VersionedTaskStatus | undefined;
}

export class AttemptEnding {
  constructor(
    private readonly deps: Pick<TaskRunnerDependencies, 'log' | 'tools' | 'accountUsage' | 'prices'>,
    private readonly statusWrites: AttemptStatusWrites,
    private readonly now: () => number,
  ) {}

  /** What the task has spent so far (its earlier attempts'), priced by this executor's table. */
  spendOf(task: AssembledTask, resume: ResumePoint | undefined): TaskSpend {
    return new TaskSpend(pricesOf(this.deps.prices ?? new Map(), task.runtime_config), resume?.spent);
  }

  /**
   * Publishes the terminal event, records the final status and adds the spend to the account's day
   * (awaited before returning, so before the message is settled). False when another executor owns the
   * event stream; any other failure is thrown so the message is redelivered.
   */
  async write(
    task: AssembledTask,
    attempt: number,
    observed: AttemptObservers,
    { emit, spend, status }: TerminalWrite,
  ): Promise<boolean> {
    const usage = this.#addingUsage(task, spend, emit);
    const stored = await this.#finish(task, attempt, observed, usage.emit, status);
    await usage.added();
    return stored;
  }

  async #finish(
    task: AssembledTask,
    attempt: number,
    { span, metrics, untrack, subtaskCallIds }: AttemptObservers,
    emit: () => Promise<TerminalEvent>,
    status: VersionedTaskStatus | undefined,
  ): Promise<boolean> {
    let terminal: TerminalEvent;
    try {
      terminal = await emit();
    } catch (error) {
      if (error instanceof EventStreamConflictError) {
        this.deps.log.warn("another executor wrote this task's events; leaving the task to it");
        return false;
      }
      throw error;
    }
    if (terminal.type === 'error') markFailed(span, terminal.data.code, terminal.data.message);
    metrics.ended(terminal.type === 'error' ? terminal.data.code : 'done');
    // With its terminal event stored, a cancel can change nothing: stop hearing the task's status writes
    // before writing the final one, which would only come back as an echo.
    untrack?.();
    await this.statusWrites.recordFinal(task, attempt, terminal, status);
    if (terminal.type === 'error' && subtaskCallIds !== undefined) {
      await this.deps.tools.subAgents?.cancelSubtasks(task.task_meta, subtaskCallIds, terminal.data.code);
    }
    this.deps.log.info(
      { attempt, outcome: terminal.type, ...(terminal.type === 'error' ? { code: terminal.data.code } : {}) },
      'task attempt finished',
    );
    return true;
  }

  /**
   * `emit` of a terminal event, and once it is stored, the task's spend added to its account's day, beside
   * the final status write (which it does not delay); `added` resolves when the addition is done. A failed
   * addition is logged, not thrown: the task has ended, and its redelivery would not add it either.
   */
  #addingUsage(
    task: AssembledTask,
    spend: TaskSpend,
    emit: () => Promise<TerminalEvent>,
  ): { emit: () => Promise<TerminalEvent>; added: () => Promise<void> } {
    let adding = Promise.resolve();
    return {
      emit: async () => {
        const terminal = await emit();
        adding = this.#addUsage(task, spend);
        return terminal;
      },
      added: () => adding,
    };
  }

  async #addUsage(task: AssembledTask, spend: TaskSpend): Promise<void> {
    const store = this.deps.accountUsage;
    if (store === undefined) return;
    const usage = { totalTokens: spend.usage.total_tokens, costUsd: spend.costUsd ?? 0 };
    await addSpendToAccountDay(store, task.task_meta.account_id, usage, {
      now: new Date(this.now()),
      log: this.deps.log,
    });
  }
}
