/**
 * What nats-server itself counted, from its monitoring endpoint (`/varz`): messages and bytes in (published
 * by clients, JetStream API requests included) and out (delivered to subscribers, replies included). The
 * bench reads it before and after a scenario and reports the difference per task.
 */
export interface NatsTraffic {
  in_msgs: number;
  out_msgs: number;
  in_bytes: number;
  out_bytes: number;
}

const COUNTERS = ['in_msgs', 'out_msgs', 'in_bytes', 'out_bytes'] as const;

/** The four traffic counters of a `/varz` answer; a missing or non-numeric one is an error, not a zero. */
export function parseVarz(body: unknown): NatsTraffic {
  if (typeof body !== 'object' || body === null) throw new Error('/varz did not answer a JSON object');
  const fields = body as Record<string, unknown>;
  const traffic = {} as NatsTraffic;
  for (const counter of COUNTERS) {
    const value = fields[counter];
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new Error(`/varz has no numeric ${counter} (got ${JSON.stringify(value)})`);
    }
    traffic[counter] = value;
  }
  return traffic;
}

/** Traffic between two readings, divided by the tasks run in between. */
export function trafficPerTask(before: NatsTraffic, after: NatsTraffic, tasks: number): NatsTraffic {
  if (tasks <= 0) throw new RangeError(`tasks must be positive, got ${tasks}`);
  const perTask = {} as NatsTraffic;
  for (const counter of COUNTERS) {
    const delta = after[counter] - before[counter];
    // The counters only grow while the server runs; a drop means it restarted under the bench.
    if (delta < 0)
      throw new Error(`nats-server's ${counter} went down (${before[counter]} → ${after[counter]})`);
    perTask[counter] = delta / tasks;
  }
  return perTask;
}

export async function readVarz(monitorUrl: string): Promise<NatsTraffic> {
  const response = await fetch(`${monitorUrl}/varz`, { signal: AbortSignal.timeout(5_000) });
  if (!response.ok) throw new Error(`${monitorUrl}/varz answered ${response.status}`);
  return parseVarz(await response.json());
}
