/**
 * Metrics of the assembler. Attributes stay few and bounded: reasons and codes, never payloads, secrets
 * or trace ids.
 */
import { metrics, type Counter, type Meter } from '@opentelemetry/api';

export const ASSEMBLER_METER = 'agentmesh-assembler';

export const AssemblerMetric = {
  MALFORMED_TASKS: 'agentmesh.tasks.malformed',
} as const;

/** The assembler's instruments; create it once the meter provider is registered (the API has no proxy). */
export class AssemblerMetrics {
  /** Received-task messages refused as malformed, by `reason` (MalformedTaskReason). */
  readonly malformedTasks: Counter;

  constructor(meter: Meter = metrics.getMeter(ASSEMBLER_METER)) {
    this.malformedTasks = meter.createCounter(AssemblerMetric.MALFORMED_TASKS, {
      description: 'Received-task messages refused as malformed, by reason',
      unit: '{message}',
    });
  }
}
