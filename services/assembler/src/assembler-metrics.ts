/**
 * Metrics of the assembler (SPEC §6): tasks by how their assembly ended and how long the attempt that
 * ended them took, definition and credential lookups by whether memory or the bucket answered, and
 * malformed messages. Attributes stay few and bounded: outcomes, error codes, registries and reasons,
 * never payloads, secrets, accounts or trace ids.
 */
import type { LookupSource } from '@agentmesh/bus';
import type { ErrorCode } from '@agentmesh/protocol';
import { metrics, type Counter, type Histogram, type Meter } from '@opentelemetry/api';

export const ASSEMBLER_METER = 'agentmesh-assembler';

export const AssemblerMetric = {
  TASKS: 'agentmesh.assembly.tasks',
  DURATION: 'agentmesh.assembly.duration',
  LOOKUPS: 'agentmesh.assembly.lookups',
  MALFORMED_TASKS: 'agentmesh.tasks.malformed',
} as const;

/** Which mirror a lookup went to, as the `registry` attribute of {@link AssemblerMetric.LOOKUPS}. */
export const LookupRegistry = {
  AGENTS: 'agents',
  TOOLS: 'tools',
  CREDENTIALS: 'credentials',
} as const;
export type LookupRegistry = (typeof LookupRegistry)[keyof typeof LookupRegistry];

/** How an assembly ended: published, or the code of the error event that ended the task. */
export type AssemblyEnding = 'published' | ErrorCode;

// An assembly takes milliseconds when everything is in memory, up to seconds when it reads KV.
const ASSEMBLY_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The assembler's instruments; create it once the meter provider is registered (the API has no proxy). */
export class AssemblerMetrics {
  /** Tasks whose assembly ended, by `outcome`: `published`, or the error code lower-cased. */
  readonly tasks: Counter;
  /** Duration of the assembly attempt that ended the task (retried attempts are not recorded), by `outcome`. */
  readonly duration: Histogram;
  /** Definitions and credentials served from memory, and reads of their buckets, by `registry` and `source`. */
  readonly lookups: Counter;
  /** Received-task messages refused as malformed, by `reason` (MalformedTaskReason). */
  readonly malformedTasks: Counter;

  constructor(meter: Meter = metrics.getMeter(ASSEMBLER_METER)) {
    this.tasks = meter.createCounter(AssemblerMetric.TASKS, {
      description: 'Received tasks whose assembly ended, by outcome',
      unit: '{task}',
    });
    this.duration = meter.createHistogram(AssemblerMetric.DURATION, {
      description: 'Duration of the assembly attempt that ended a task, by outcome',
      unit: 's',
      advice: { explicitBucketBoundaries: ASSEMBLY_SECONDS },
    });
    this.lookups = meter.createCounter(AssemblerMetric.LOOKUPS, {
      description: 'Agent, tool and credential lookups served from memory, and reads of their buckets',
      unit: '{lookup}',
    });
    this.malformedTasks = meter.createCounter(AssemblerMetric.MALFORMED_TASKS, {
      description: 'Received-task messages refused as malformed, by reason',
      unit: '{message}',
    });
  }

  /** Starts timing one assembly attempt; call what it returns once the attempt has ended the task. */
  startAssembly(): (ending: AssemblyEnding) => void {
    const startedAt = performance.now();
    return (ending) => {
      const attributes = { outcome: ending.toLowerCase() };
      this.tasks.add(1, attributes);
      this.duration.record((performance.now() - startedAt) / 1000, attributes);
    };
  }

  /** What a mirror of `registry` is given as its `onLookup`. */
  lookupsOf(registry: LookupRegistry): (source: LookupSource) => void {
    return (source) => this.lookups.add(1, { registry, source });
  }
}
