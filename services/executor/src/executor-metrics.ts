/**
 * Metrics of the executor (SPEC §6): tasks and their outcomes, durations and model calls, every model call
 * (after the OpenTelemetry GenAI conventions: `gen_ai.client.operation.duration`, `gen_ai.client.token.usage`)
 * and every tool call. Attributes stay few and bounded: outcomes, error codes, model and tool names —
 * never arguments, secrets or trace ids.
 *
 * One `TaskMetrics` meters one task attempt: the agent loop reports its model and tool calls to it, the
 * runner its terminal outcome.
 */
import type { ErrorCode, TokenUsage } from '@agentmesh/protocol';
import { metrics, type Counter, type Histogram, type Meter } from '@opentelemetry/api';
import { GenAiAttribute, GenAiOperation } from './gen-ai-spans.js';

export const EXECUTOR_METER = 'agentmesh-executor';

export const ExecutorMetric = {
  TASKS: 'agentmesh.tasks',
  TASK_DURATION: 'agentmesh.task.duration',
  TASK_STEPS: 'agentmesh.task.steps',
  MODEL_CALL_DURATION: 'gen_ai.client.operation.duration',
  TOKEN_USAGE: 'gen_ai.client.token.usage',
  TOOL_CALLS: 'agentmesh.tool.calls',
  TOOL_DURATION: 'agentmesh.tool.duration',
  MALFORMED_TASKS: 'agentmesh.tasks.malformed',
} as const;

const OUTCOME = 'outcome';
const TOKEN_TYPE = 'gen_ai.token.type';

// Bucket boundaries the GenAI conventions advise for these two histograms.
const MODEL_CALL_SECONDS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
const TOKENS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];
// Tasks run for seconds to an hour; tools from milliseconds to minutes.
const TASK_SECONDS = [0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600];
const TOOL_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const STEPS = [1, 2, 3, 4, 5, 8, 10, 15, 20, 30, 50, 100];

/**
 * How a task attempt ended, as the `outcome` attribute: `done`, its error code lower-cased, or `parked`
 * (it waits for approval; the attempt that resumes it ends it).
 */
export type TaskOutcome = 'done' | 'parked' | ErrorCode;

/** The executor's instruments; create it once the meter provider is registered (the API has no proxy). */
export class ExecutorMetrics {
  readonly tasks: Counter;
  readonly taskDuration: Histogram;
  readonly taskSteps: Histogram;
  readonly modelCallDuration: Histogram;
  readonly tokenUsage: Histogram;
  readonly toolCalls: Counter;
  readonly toolDuration: Histogram;
  /** Task messages refused as malformed, by `reason` (MalformedTaskReason). */
  readonly malformedTasks: Counter;

  constructor(meter: Meter = metrics.getMeter(EXECUTOR_METER)) {
    const seconds = (boundaries: number[]) => ({
      unit: 's',
      advice: { explicitBucketBoundaries: boundaries },
    });
    this.tasks = meter.createCounter(ExecutorMetric.TASKS, {
      description: 'Tasks that ended, by outcome',
      unit: '{task}',
    });
    this.taskDuration = meter.createHistogram(ExecutorMetric.TASK_DURATION, {
      description: 'Duration of the task attempt that ended the task',
      ...seconds(TASK_SECONDS),
    });
    this.taskSteps = meter.createHistogram(ExecutorMetric.TASK_STEPS, {
      description: 'Model calls of the task attempt that ended the task',
      unit: '{step}',
      advice: { explicitBucketBoundaries: STEPS },
    });
    this.modelCallDuration = meter.createHistogram(ExecutorMetric.MODEL_CALL_DURATION, {
      description: 'GenAI operation duration',
      ...seconds(MODEL_CALL_SECONDS),
    });
    this.tokenUsage = meter.createHistogram(ExecutorMetric.TOKEN_USAGE, {
      description: 'Number of input and output tokens used',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKENS },
    });
    this.toolCalls = meter.createCounter(ExecutorMetric.TOOL_CALLS, {
      description: 'Tool calls that ran, by outcome',
      unit: '{call}',
    });
    this.toolDuration = meter.createHistogram(ExecutorMetric.TOOL_DURATION, {
      description: 'Duration of tool calls',
      ...seconds(TOOL_SECONDS),
    });
    this.malformedTasks = meter.createCounter(ExecutorMetric.MALFORMED_TASKS, {
      description: 'Task messages refused as malformed, by reason',
      unit: '{message}',
    });
  }

  /** Starts metering one task attempt; its clock starts now. */
  startTask(): TaskMetrics {
    return new TaskMetrics(this);
  }
}

export interface ModelCallMetering {
  succeeded(usage: TokenUsage): void;
  /** `errorType` is the protocol error code (or exception name), as on the span's `error.type`. */
  failed(errorType: string): void;
}

export class TaskMetrics {
  #modelCalls = 0;
  readonly #startedAt = performance.now();

  constructor(private readonly instruments: ExecutorMetrics) {}

  /** Called as a model call starts; it counts as one of the task's steps. */
  modelCall(model: string): ModelCallMetering {
    this.#modelCalls++;
    const startedAt = performance.now();
    const attributes = {
      [GenAiAttribute.OPERATION_NAME]: GenAiOperation.CHAT,
      [GenAiAttribute.REQUEST_MODEL]: model,
    };
    const { modelCallDuration, tokenUsage } = this.instruments;
    return {
      succeeded: (usage) => {
        modelCallDuration.record(secondsSince(startedAt), attributes);
        tokenUsage.record(usage.prompt_tokens, { ...attributes, [TOKEN_TYPE]: 'input' });
        tokenUsage.record(usage.completion_tokens, { ...attributes, [TOKEN_TYPE]: 'output' });
      },
      failed: (errorType) => {
        modelCallDuration.record(secondsSince(startedAt), {
          ...attributes,
          [GenAiAttribute.ERROR_TYPE]: errorType,
        });
      },
    };
  }

  /** Called as a tool starts running; call what it returns with the tool's error code, or none for success. */
  toolCall(tool: string): (errorCode?: ErrorCode) => void {
    const startedAt = performance.now();
    return (errorCode) => {
      const attributes = { [GenAiAttribute.TOOL_NAME]: tool, [OUTCOME]: errorCode?.toLowerCase() ?? 'ok' };
      this.instruments.toolCalls.add(1, attributes);
      this.instruments.toolDuration.record(secondsSince(startedAt), attributes);
    };
  }

  /** Called once the task's terminal event is written. */
  ended(outcome: TaskOutcome): void {
    const attributes = { [OUTCOME]: outcome.toLowerCase() };
    this.instruments.tasks.add(1, attributes);
    this.instruments.taskDuration.record(secondsSince(this.#startedAt), attributes);
    this.instruments.taskSteps.record(this.#modelCalls, attributes);
  }
}

function secondsSince(startedAt: number): number {
  return (performance.now() - startedAt) / 1000;
}
