/**
 * CPU time spent by the whole machine, from /proc/stat: what a run of tasks costs summed over every
 * process involved (nats-server in its container, each service, the client), which no single process can
 * report. Idle and I/O wait are not counted. Background work of the machine counts too, so compare numbers
 * taken in one run on an otherwise idle machine. Undefined where /proc/stat is not there.
 */
import { existsSync, readFileSync } from 'node:fs';

/** `ticksPerSecond`: USER_HZ, the unit /proc/stat counts in (`getconf CLK_TCK`, 100 on Linux). */
export function machineBusyCpuMs(ticksPerSecond = 100): number | undefined {
  if (!existsSync('/proc/stat')) return undefined;
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields.map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1000) / ticksPerSecond;
}
