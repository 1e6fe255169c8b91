/**
 * Readings the paced and fan-out runs take besides CPU: a process's resident memory (/proc/<pid>/status
 * VmRSS), the JetStream consumers nats-server holds (/jsz), the acks clients publish (a counting
 * subscription on `$JS.ACK.>`, in-progress acks apart), and when the mesh is back to its idle CPU after
 * a load (from CPU samples taken through and after the load).
 */
import { readFileSync } from 'node:fs';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';

/** VmRSS of a `/proc/<pid>/status` text, in bytes. */
export function parseRssBytes(status: string): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  if (!match) throw new Error('no VmRSS line in /proc/<pid>/status');
  return Number(match[1]) * 1024;
}

export function readRssBytes(pid: number): number {
  return parseRssBytes(readFileSync(`/proc/${pid}/status`, 'utf8'));
}

/** The number of JetStream consumers of a `/jsz` answer. */
export function parseJszConsumers(body: unknown): number {
  const consumers = (body as { consumers?: unknown } | null)?.consumers;
  if (typeof consumers !== 'number' || !Number.isFinite(consumers)) {
    throw new Error(`/jsz has no numeric consumers (got ${JSON.stringify(consumers)})`);
  }
  return consumers;
}

export async function readJetStreamConsumers(monitorUrl: string): Promise<number> {
  const response = await fetch(`${monitorUrl}/jsz`, { signal: AbortSignal.timeout(5_000) });
  if (!response.ok) throw new Error(`${monitorUrl}/jsz answered ${response.status}`);
  return parseJszConsumers(await response.json());
}

/** The kind of a JetStream ack by its payload: `+WPI` is an in-progress ack (a keep-alive). */
export const AckKind = { progress: 'progress', other: 'other' } as const;
export type AckKind = (typeof AckKind)[keyof typeof AckKind];
export const ackKindOf = (payload: Uint8Array): AckKind =>
  payload.length === 4 &&
  payload[0] === 0x2b && // +
  payload[1] === 0x57 && // W
  payload[2] === 0x50 && // P
  payload[3] === 0x49 // I
    ? AckKind.progress
    : AckKind.other;

/**
 * Counts the acks every client publishes (`$JS.ACK.>`). Each counted ack is also one more message out
 * of nats-server (to this subscription), which the paced report takes off `/varz`'s out_msgs.
 */
export class AckCounter {
  progress = 0;
  other = 0;
  private readonly subscription: Subscription;

  constructor(nc: NatsConnection) {
    this.subscription = nc.subscribe('$JS.ACK.>', {
      callback: (error, msg) => {
        if (error) return;
        if (ackKindOf(msg.data) === AckKind.progress) this.progress += 1;
        else this.other += 1;
      },
    });
  }

  read(): { progress: number; other: number } {
    return { progress: this.progress, other: this.other };
  }

  stop(): void {
    this.subscription.unsubscribe();
  }
}

/** Mesh CPU over one sampling interval, ending at `at` (ms, performance.now()). */
export interface CpuRateSample {
  at: number;
  /** ms of mesh CPU in the interval. */
  cpuMs: number;
  /** The interval's length in ms. */
  intervalMs: number;
}

/**
 * Seconds from `loadEndedAt` until the mesh is back to idle: the start of the first run of samples,
 * lasting `holdMs` or more, whose CPU taken together is at or under `idleMsPerS` per second. undefined
 * when the samples never get there. Together, not each: /proc counts CPU in 10 ms ticks, so one tick in a
 * 250 ms sample reads 40 ms/s, and a mesh at rest (4 ms/s: a tick every 2.5 s somewhere among its
 * processes) passed a test of every sample only by luck (back to idle measured "> 30 s" while every
 * process sat at rest from the load's end).
 */
export function secondsBackToIdle(
  samples: readonly CpuRateSample[],
  loadEndedAt: number,
  idleMsPerS: number,
  holdMs = 2_000,
): number | undefined {
  const after = samples.filter((sample) => sample.at > loadEndedAt);
  for (let first = 0; first < after.length; first++) {
    const start = after[first]!;
    const quietSince = Math.max(start.at - start.intervalMs, loadEndedAt);
    let cpuMs = 0;
    let intervalMs = 0;
    for (const sample of after.slice(first)) {
      cpuMs += sample.cpuMs;
      intervalMs += sample.intervalMs;
      if (sample.at - quietSince < holdMs) continue;
      if ((cpuMs / intervalMs) * 1000 <= idleMsPerS) return (quietSince - loadEndedAt) / 1000;
      break;
    }
  }
  return undefined;
}

/** What counts as idle again: the idle rate measured before the load, with a little room for noise. */
export const idleThresholdMsPerS = (idleMsPerS: number): number => Math.max(idleMsPerS * 1.5, idleMsPerS + 2);
