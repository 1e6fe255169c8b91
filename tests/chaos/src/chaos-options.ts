/**
 * Sizes of a chaos run, from the environment: a profile (`full`, the default, or `ci`) and a variable per
 * size over it. Every variable is optional; a bad value stops the run with its name.
 */

export const ChaosProfile = { full: 'full', ci: 'ci' } as const;
export type ChaosProfile = (typeof ChaosProfile)[keyof typeof ChaosProfile];

export interface ChaosOptions {
  profile: ChaosProfile;
  /** Tasks submitted at least (more while the faults are still being injected). */
  tasks: number;
  /** Concurrent clients, each submitting one task and waiting for its end before the next. */
  clients: number;
  /** SIGKILLs of service processes (each restarted). */
  kills: number;
  /** Pause between two service kills. */
  killIntervalMs: number;
  /** How long a killed service stays dead before it is started again. */
  restartDelayMs: number;
  /** NATS node faults (kill or pause, alternating), each followed by the node's return. */
  natsFaults: number;
  /** Pause between two NATS node faults (after the cluster has its meta leader again). */
  natsFaultIntervalMs: number;
  /** How long a node stays killed. */
  natsDownMs: number;
  /** How long a node stays paused (SIGSTOP of nats-server): past the executors' ack_wait. */
  natsPauseMs: number;
  /** SIGSTOPs of a busy executor (each followed by SIGCONT): a zombie that wakes believing it owns its tasks. */
  executorPauses: number;
  /** Pause between two executor pauses. */
  executorPauseIntervalMs: number;
  /** How long an executor stays stopped: past its ack_wait (3 s by default), so its tasks are redelivered. */
  executorPauseMs: number;
  /** The bound: after the faults stop, every accepted task must reach a terminal event within it. */
  settleMs: number;
  /** The run fails when the p99 of executor kill → the task running again is above this (issue: < 10 s). */
  maxTakeoverP99Ms: number;
  /** Executors' ACK_WAIT_MS / ACK_PROGRESS_MS; empty: the service's default. */
  executorAckWaitMs: string;
  executorAckProgressMs: string;
  /** Delays of the scripted model and the tool API. */
  modelLatencyMs: number;
  chunkDelayMs: number;
  toolDelayMs: number;
  /** Random seed of the fault driver's choices (default: from the clock), so a run can be replayed. */
  seed: number;
}

const PROFILES: Record<ChaosProfile, Omit<ChaosOptions, 'profile' | 'seed'>> = {
  full: {
    tasks: 500,
    clients: 20,
    kills: 50,
    killIntervalMs: 2_000,
    restartDelayMs: 500,
    natsFaults: 5,
    natsFaultIntervalMs: 12_000,
    natsDownMs: 4_000,
    natsPauseMs: 6_000,
    executorPauses: 8,
    executorPauseIntervalMs: 6_000,
    executorPauseMs: 7_000,
    settleMs: 120_000,
    maxTakeoverP99Ms: 10_000,
    executorAckWaitMs: '',
    executorAckProgressMs: '',
    modelLatencyMs: 250,
    chunkDelayMs: 60,
    toolDelayMs: 300,
  },
  ci: {
    tasks: 120,
    clients: 20,
    kills: 12,
    killIntervalMs: 2_000,
    restartDelayMs: 500,
    natsFaults: 2,
    natsFaultIntervalMs: 8_000,
    natsDownMs: 3_000,
    natsPauseMs: 5_000,
    executorPauses: 3,
    executorPauseIntervalMs: 5_000,
    executorPauseMs: 6_000,
    settleMs: 120_000,
    maxTakeoverP99Ms: 10_000,
    executorAckWaitMs: '',
    executorAckProgressMs: '',
    modelLatencyMs: 250,
    chunkDelayMs: 60,
    toolDelayMs: 300,
  },
};

const VARIABLES: Record<
  Exclude<keyof ChaosOptions, 'profile' | 'executorAckWaitMs' | 'executorAckProgressMs'>,
  string
> = {
  tasks: 'CHAOS_TASKS',
  clients: 'CHAOS_CLIENTS',
  kills: 'CHAOS_KILLS',
  killIntervalMs: 'CHAOS_KILL_INTERVAL_MS',
  restartDelayMs: 'CHAOS_RESTART_DELAY_MS',
  natsFaults: 'CHAOS_NATS_FAULTS',
  natsFaultIntervalMs: 'CHAOS_NATS_FAULT_INTERVAL_MS',
  natsDownMs: 'CHAOS_NATS_DOWN_MS',
  natsPauseMs: 'CHAOS_NATS_PAUSE_MS',
  executorPauses: 'CHAOS_EXECUTOR_PAUSES',
  executorPauseIntervalMs: 'CHAOS_EXECUTOR_PAUSE_INTERVAL_MS',
  executorPauseMs: 'CHAOS_EXECUTOR_PAUSE_MS',
  settleMs: 'CHAOS_SETTLE_MS',
  maxTakeoverP99Ms: 'CHAOS_MAX_TAKEOVER_P99_MS',
  modelLatencyMs: 'CHAOS_MODEL_LATENCY_MS',
  chunkDelayMs: 'CHAOS_CHUNK_DELAY_MS',
  toolDelayMs: 'CHAOS_TOOL_DELAY_MS',
  seed: 'CHAOS_SEED',
};

export function chaosOptions(env: Readonly<Record<string, string | undefined>> = process.env): ChaosOptions {
  const profileName = env.CHAOS_PROFILE ?? ChaosProfile.full;
  if (!Object.values(ChaosProfile).includes(profileName as ChaosProfile)) {
    throw new Error(
      `CHAOS_PROFILE must be one of ${Object.values(ChaosProfile).join(', ')}, got "${profileName}"`,
    );
  }
  const profile = profileName as ChaosProfile;
  const options: ChaosOptions = { profile, ...PROFILES[profile], seed: Date.now() % 2_147_483_647 };
  for (const [key, variable] of Object.entries(VARIABLES) as Array<[keyof typeof VARIABLES, string]>) {
    const raw = env[variable];
    if (raw === undefined || raw === '') continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 0)
      throw new Error(`${variable} must be a whole number ≥ 0, got "${raw}"`);
    options[key] = value;
  }
  if (options.clients < 1) throw new Error('CHAOS_CLIENTS must be at least 1');
  options.executorAckWaitMs = env.CHAOS_EXECUTOR_ACK_WAIT_MS ?? options.executorAckWaitMs;
  options.executorAckProgressMs = env.CHAOS_EXECUTOR_ACK_PROGRESS_MS ?? options.executorAckProgressMs;
  return options;
}
