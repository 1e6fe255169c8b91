/** The ledger of a chaos run as a table for people (stdout) and as JSON (`.chaos/`). */
import type { LedgerVerdict } from './ledger-checks.js';
import type { RecoveryReport, TakeoverReport } from './recovery.js';

export interface LedgerRun {
  profile: string;
  seed: number;
  startedAt: string;
  durationS: number;
  natsServer: string;
  /** Submissions given up after retries (never accepted), and why (first few). */
  refused: number;
  refusals: string[];
  killsByKind: Record<string, number>;
  natsFaultsByKind: Record<string, number>;
  /** Executors stopped (SIGSTOP) past their ack_wait and woken (SIGCONT). */
  executorPauses: number;
  restartFailures: string[];
  /** Why the run fails although every check of the log passed (refused submissions, services left down). */
  runFailures: string[];
  /** Work-queue messages of finished tasks that stayed after their ack, deleted after the run. */
  leftoversCleaned: number;
  /** Tasks a gateway published again because the task queue lost their message (its logs). */
  redrivenTasks: number;
  /** Seconds from the end of the faults until the last accepted task ended (or the bound ran out). */
  settleS: number;
}

const ms = (value: number | null): string => (value === null ? '–' : `${(value / 1000).toFixed(1)} s`);

export function renderLedger(
  run: LedgerRun,
  verdict: LedgerVerdict,
  recovery: RecoveryReport,
  takeover: TakeoverReport,
): string {
  const { tasks, sideEffects, followers } = verdict;
  const kills = Object.entries(run.killsByKind)
    .map(([kind, count]) => `${count} ${kind}`)
    .join(', ');
  const natsFaults = Object.entries(run.natsFaultsByKind)
    .map(([kind, count]) => `${count} ${kind}`)
    .join(', ');
  const errors = Object.entries(tasks.errorsByCode)
    .map(([code, count]) => `${code} ×${count}`)
    .join(', ');
  const rows: Array<[string, string]> = [
    ['tasks accepted', String(tasks.accepted)],
    ['  done', String(tasks.done)],
    ['  error', `${tasks.error}${errors ? ` (${errors})` : ''}`],
    ['  lost', String(tasks.lost)],
    ['  duplicated terminal', String(tasks.duplicatedTerminal)],
    ['  redelivered / with attempt_started', `${tasks.redelivered} / ${tasks.withAttemptStarted}`],
    ['  status record ≠ terminal event', String(tasks.statusDisagreements)],
    [
      '  dead-lettered with < MAX_DELIVER attempts killed or frozen (a NATS fault)',
      String(tasks.deadLetteredByPause),
    ],
    ['submissions refused', String(run.refused)],
    [
      'NATS followers (core, subscribed before submit)',
      `${followers.tasks} tasks, ${followers.received} events received`,
    ],
    ['  unstored events seen', String(followers.unstored)],
    ['  repeated or out of order', String(followers.repeatedOrReordered)],
    [
      '  missed (connection up / across a reconnect or NATS fault)',
      `${followers.missed} / ${followers.missedAcrossReconnect}`,
    ],
    ['side effects (tool API calls)', `${sideEffects.calls} for ${sideEffects.keys} keys`],
    ['  repeats (any)', String(sideEffects.repeats)],
    ['  repeats after a recorded result', String(sideEffects.repeatsAfterResult)],
    ['  not in the log', String(sideEffects.unlogged)],
    ['service kills', kills || '0'],
    ['NATS node faults', natsFaults || '0'],
    ['executor pauses (SIGSTOP past ack_wait, SIGCONT)', String(run.executorPauses)],
    [
      'executor kill → task running again',
      `p50 ${ms(takeover.afterExecutorKill.p50_ms)}, p99 ${ms(takeover.afterExecutorKill.p99_ms)}, max ${ms(takeover.afterExecutorKill.max_ms)} (${takeover.afterExecutorKill.count} tasks held; executors' logs)`,
    ],
    [
      '  no NATS node down meanwhile',
      `p50 ${ms(takeover.withoutNatsFault.p50_ms)}, p99 ${ms(takeover.withoutNatsFault.p99_ms)}, max ${ms(takeover.withoutNatsFault.max_ms)} (${takeover.withoutNatsFault.count})`,
    ],
    [
      '  a NATS node down or paused meanwhile',
      `p50 ${ms(takeover.duringNatsFault.p50_ms)}, p99 ${ms(takeover.duringNatsFault.p99_ms)}, max ${ms(takeover.duringNatsFault.max_ms)} (${takeover.duringNatsFault.count})`,
    ],
    [
      'executor kill → next event (log only)',
      `p50 ${ms(recovery.afterExecutorKill.p50_ms)}, p99 ${ms(recovery.afterExecutorKill.p99_ms)}, max ${ms(recovery.afterExecutorKill.max_ms)} (${recovery.afterExecutorKill.count} tasks)`,
    ],
    [
      'recovery after NATS fault',
      `p50 ${ms(recovery.afterNatsFault.p50_ms)}, p99 ${ms(recovery.afterNatsFault.p99_ms)}, max ${ms(recovery.afterNatsFault.max_ms)} (${recovery.afterNatsFault.count} tasks)`,
    ],
    [
      'takeovers after NATS fault / unexplained',
      `${recovery.takeoversAfterNatsFault} / ${recovery.unexplainedTakeovers}`,
    ],
    ['work-queue leftovers (cleaned)', `${verdict.workQueueLeftovers} (${run.leftoversCleaned})`],
    ['tasks published again after the queue lost them', String(run.redrivenTasks)],
    ['failed starts of killed services', String(run.restartFailures.length)],
    ['settled after the faults', `${run.settleS.toFixed(1)} s`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = [
    `chaos ledger — profile ${run.profile}, seed ${run.seed}, nats-server ${run.natsServer}, ${run.durationS.toFixed(0)} s`,
    '',
    ...rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`),
    '',
    'checks:',
    ...verdict.checks.flatMap((check) => [
      `  ${check.passed ? 'PASS' : 'FAIL'}  ${check.name}${check.passed ? '' : ` (${check.violations})`}`,
      ...check.examples.map((example) => `          ${example}`),
    ]),
  ];
  if (takeover.slowest.length > 0) {
    lines.push('', 'slowest takeovers after an executor kill (kill → the task running again):');
    for (const slow of takeover.slowest) lines.push(`  ${ms(slow.ms)}  ${slow.traceId} (${slow.target})`);
  }
  if (recovery.slowest.length > 0) {
    lines.push('', 'slowest executor-kill recoveries, log only (the first kill of the window blamed):');
    for (const slow of recovery.slowest) lines.push(`  ${ms(slow.ms)}  ${slow.traceId} (${slow.target})`);
  }
  if (run.restartFailures.length > 0) {
    // The service's last log line, cut: the message says why, the stack would fill the screen.
    lines.push(
      '',
      `failed starts of killed services (each retried; first ${Math.min(5, run.restartFailures.length)}):`,
    );
    lines.push(
      ...run.restartFailures
        .slice(0, 5)
        .map((failure) => `  ${failure.replace(/"stack":"[^"]*",?/g, '').slice(0, 300)}`),
    );
  }
  if (run.refusals.length > 0) lines.push('', 'refused submissions:', ...run.refusals.map((r) => `  ${r}`));
  for (const failure of run.runFailures) lines.push('', `run failure: ${failure}`);
  lines.push('', verdict.passed && run.runFailures.length === 0 ? 'LEDGER: PASS' : 'LEDGER: FAIL');
  return lines.join('\n');
}
