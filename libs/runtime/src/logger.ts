/**
 * The one logger of every service: pino JSON lines carrying `service` (and `trace_id`/`span_id` of the
 * active span, when there is one), with secret-named fields
 * redacted at any depth (see redaction.ts) so that no secret reaches a log line in clear, and each finished
 * line passed through the process's secret filters (see secret-filter.ts), which remove secret values
 * wherever they are, message and error stack included.
 */
import { pino, type Logger } from 'pino';
import { redactSecrets } from './redaction.js';
import { filterSecrets } from './secret-filter.js';
import { activeTraceIds } from './trace-context.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  service: string;
  level?: string;
  /** Where lines go; stdout when omitted. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
}

export function createLogger({ service, level = 'info', destination }: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    mixin: () => activeTraceIds() ?? {},
    formatters: {
      level: (label) => ({ level: label }),
      log: (object) => redactSecrets(object) as Record<string, unknown>,
    },
    hooks: { streamWrite: filterSecrets },
  };
  return destination ? pino(options, destination) : pino(options);
}
