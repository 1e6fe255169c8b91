/**
 * How many tasks wait in JetStream, per stage: the `num_pending` of the durable consumer reading each
 * stage of MESH_TASKS (received → the assembler's, assembled → the executors'). One consumer info request
 * per stage at most every `maxAgeMs`, whatever the collection rate: every read in between answers the
 * cached depths, and concurrent reads share one refresh. A stage whose consumer does not exist yet (its
 * service never started) or could not be asked is left out until the next refresh.
 */
import { Consumers } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

export const QueueStage = {
  /** Received tasks, waiting for an assembler. */
  RECEIVED: 'received',
  /** Assembled tasks, waiting for an executor. */
  ASSEMBLED: 'assembled',
} as const;
export type QueueStage = (typeof QueueStage)[keyof typeof QueueStage];

export interface QueueDepth {
  stage: QueueStage;
  /** Messages of the stage no instance has been handed yet. */
  pending: number;
}

/** The part of a JetStreamManager's consumer API this needs (`jsm.consumers`). */
export interface ConsumerInfoSource {
  info(stream: string, consumer: string): Promise<{ num_pending: number }>;
}

const STAGE_CONSUMERS = [
  { stage: QueueStage.RECEIVED, consumer: Consumers.ASSEMBLER },
  { stage: QueueStage.ASSEMBLED, consumer: Consumers.EXECUTOR },
] as const;

export interface TaskQueueDepthOptions {
  consumers: ConsumerInfoSource;
  /** How long depths read from JetStream are answered from memory. */
  maxAgeMs: number;
  log: Logger;
  now?: () => number;
}

export class TaskQueueDepth {
  readonly #now: () => number;
  #cached: { readAt: number; depths: readonly QueueDepth[] } | undefined;
  #refreshing: Promise<readonly QueueDepth[]> | undefined;

  constructor(private readonly options: TaskQueueDepthOptions) {
    this.#now = options.now ?? Date.now;
  }

  /** The depths, at most `maxAgeMs` old. */
  read(): Promise<readonly QueueDepth[]> {
    const cached = this.#cached;
    if (cached !== undefined && this.#now() - cached.readAt < this.options.maxAgeMs) {
      return Promise.resolve(cached.depths);
    }
    this.#refreshing ??= this.#refresh().finally(() => (this.#refreshing = undefined));
    return this.#refreshing;
  }

  async #refresh(): Promise<readonly QueueDepth[]> {
    const read = await Promise.all(
      STAGE_CONSUMERS.map(async ({ stage, consumer }): Promise<QueueDepth | undefined> => {
        try {
          const info = await this.options.consumers.info(consumer.stream, consumer.durable_name);
          return { stage, pending: info.num_pending };
        } catch (error) {
          if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.ConsumerNotFound)) {
            this.options.log.warn({ err: error, stage }, 'task queue depth could not be read');
          }
          return undefined;
        }
      }),
    );
    // A failure is cached too, so an unreachable JetStream is not asked at every collection.
    const depths = read.filter((depth) => depth !== undefined);
    this.#cached = { readAt: this.#now(), depths };
    return depths;
  }
}
