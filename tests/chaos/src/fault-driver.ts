/**
 * Injects the faults of a chaos run, in two lanes at once:
 * - services: every `killIntervalMs`, SIGKILL a random running service process (executors most often)
 *   and start it again after `restartDelayMs`, leaving at least one instance of each kind running;
 * - NATS: every `natsFaultIntervalMs`, kill or pause (alternating) a random node, bring it back after
 *   `natsDownMs` (a kill) or `natsPauseMs` (a pause), and wait until the cluster agrees on a meta leader;
 * - executor pauses: every `executorPauseIntervalMs`, SIGSTOP a random running executor (never the last
 *   one running) for `executorPauseMs` — past its ack_wait, so its tasks go to another executor while
 *   it sleeps — then SIGCONT: it wakes believing it still holds them.
 * Every fault is recorded with its time, for the recovery measurements.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsCluster } from '@agentmesh/testkit';
import type { ServiceSlot } from './chaos-mesh.js';
import type { NatsFault, ServiceKill, ServiceKind, ServicePause } from './ledger/recovery.js';

export interface FaultPlan {
  kills: number;
  killIntervalMs: number;
  restartDelayMs: number;
  natsFaults: number;
  natsFaultIntervalMs: number;
  natsDownMs: number;
  natsPauseMs: number;
  executorPauses: number;
  executorPauseIntervalMs: number;
  executorPauseMs: number;
  seed: number;
}

export interface FaultRecord {
  kills: ServiceKill[];
  natsFaults: NatsFault[];
  executorPauses: ServicePause[];
  /** Starts of a killed service that failed (each tried again), with the service's last words. */
  restartFailures: string[];
  /** Services that did not come back after every retry. */
  leftDown: string[];
}

const MAX_RESTART_ATTEMPTS = 10;

/** How often each kind is picked, when an instance of it may be killed. */
const KIND_WEIGHTS: ReadonlyArray<[ServiceKind, number]> = [
  ['executor', 0.7],
  ['assembler', 0.15],
  ['gateway', 0.15],
];

/** mulberry32: a small seeded generator, so a run's choices can be replayed with CHAOS_SEED. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export async function driveFaults(
  plan: FaultPlan,
  slots: readonly ServiceSlot[],
  cluster: NatsCluster,
  say: (line: string) => void,
): Promise<FaultRecord> {
  const random = seededRandom(plan.seed);
  const record: FaultRecord = {
    kills: [],
    natsFaults: [],
    executorPauses: [],
    restartFailures: [],
    leftDown: [],
  };
  const restarts: Array<Promise<void>> = [];

  const pickVictim = (): ServiceSlot | undefined => {
    const killable = (kind: ServiceKind): ServiceSlot[] => {
      const ofKind = slots.filter((slot) => slot.kind === kind);
      const up = ofKind.filter((slot) => slot.up && !slot.paused);
      return up.length > 1 ? up : [];
    };
    const weighted = KIND_WEIGHTS.filter(([kind]) => killable(kind).length > 0);
    const total = weighted.reduce((sum, [, weight]) => sum + weight, 0);
    let roll = random() * total;
    for (const [kind, weight] of weighted) {
      roll -= weight;
      if (roll > 0) continue;
      const candidates = killable(kind);
      return candidates[Math.floor(random() * candidates.length)];
    }
    return undefined;
  };

  /**
   * Starts a killed service again. A start that fails (e.g. while a NATS node is down) is recorded and
   * tried again, so the run keeps its capacity; the failures are part of the ledger.
   */
  const restart = async (victim: ServiceSlot): Promise<void> => {
    await sleep(plan.restartDelayMs);
    for (let attempt = 1; ; attempt++) {
      try {
        await victim.start();
        return;
      } catch (error) {
        record.restartFailures.push(error instanceof Error ? error.message : String(error));
        say(`restart of ${victim.name} failed (attempt ${attempt}); trying again`);
        if (attempt >= MAX_RESTART_ATTEMPTS) {
          record.leftDown.push(victim.name);
          return;
        }
        await sleep(1_000 * attempt);
      }
    }
  };

  const serviceLane = async (): Promise<void> => {
    while (record.kills.length < plan.kills) {
      await sleep(plan.killIntervalMs);
      const victim = pickVictim();
      if (!victim) continue;
      const at = Date.now();
      await victim.kill();
      record.kills.push({ at, kind: victim.kind, target: victim.name });
      say(`kill ${record.kills.length}/${plan.kills}: ${victim.name}`);
      restarts.push(restart(victim));
    }
  };

  const natsLane = async (): Promise<void> => {
    for (let i = 0; i < plan.natsFaults; i++) {
      await sleep(plan.natsFaultIntervalMs);
      const node = cluster.nodes[Math.floor(random() * cluster.nodes.length)]!;
      const kind = i % 2 === 0 ? 'kill' : 'pause';
      const at = Date.now();
      await (kind === 'kill' ? node.kill() : node.pause());
      say(`NATS fault ${i + 1}/${plan.natsFaults}: ${kind} ${node.name}`);
      await sleep(kind === 'kill' ? plan.natsDownMs : plan.natsPauseMs);
      await (kind === 'kill' ? node.restart() : node.unpause());
      const restoredAt = Date.now();
      record.natsFaults.push({ at, kind, node: node.name, restoredAt });
      const leader = await cluster.waitForMetaLeader(90_000);
      say(`  ${node.name} back after ${restoredAt - at} ms; meta leader ${leader}`);
    }
  };

  const pauseLane = async (): Promise<void> => {
    while (record.executorPauses.length < plan.executorPauses) {
      await sleep(plan.executorPauseIntervalMs);
      const running = slots.filter((slot) => slot.kind === 'executor' && slot.up && !slot.paused);
      // Another executor must be there to take the frozen one's tasks over.
      if (running.length < 2) continue;
      const victim = running[Math.floor(random() * running.length)]!;
      const at = Date.now();
      const resume = victim.pause();
      if (resume === undefined) continue;
      say(
        `executor pause ${record.executorPauses.length + 1}/${plan.executorPauses}: SIGSTOP ${victim.name}`,
      );
      await sleep(plan.executorPauseMs);
      resume();
      record.executorPauses.push({ at, target: victim.name, resumedAt: Date.now() });
      say(`  SIGCONT ${victim.name} after ${Date.now() - at} ms`);
    }
  };

  await Promise.all([serviceLane(), natsLane(), pauseLane()]);
  await Promise.all(restarts);
  return record;
}
