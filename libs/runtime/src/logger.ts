/**
 * The one logger of every service: pino lines carrying `service` (and `trace_id`/`span_id` of the
 * active span, when there is one), with secret-named fields
 * redacted at any depth (see redaction.ts) so that no secret reaches a log line in clear, and each finished
 * line passed through the process's secret filters (see secret-filter.ts), which remove secret values
 * wherever they are, message and error stack included.
 *
 * Lines are JSON for collectors, or — for a person at a terminal — pino-pretty's coloured one-liners.
 * Pretty printing runs in-process on the finished JSON line, after redaction and the secret filters, so
 * both apply to it unchanged; it writes synchronously, so the last line before `process.exit` is not lost.
 */
import { pino, type Logger } from 'pino';
import { build as prettyStream } from 'pino-pretty';
import { redactSecrets } from './redaction.js';
import { filterSecrets } from './secret-filter.js';
import { activeTraceIds } from './trace-context.js';

export type { Logger } from 'pino';

export const LogFormat = {
  JSON: 'json',
  PRETTY: 'pretty',
} as const;
export type LogFormat = (typeof LogFormat)[keyof typeof LogFormat];

export interface LoggerOptions {
  service: string;
  level?: string;
  /**
   * `json` or `pretty`. Default: pretty when writing to stdout and stdout is a terminal, else JSON (a
   * destination given by a test is JSON unless asked otherwise).
   */
  format?: LogFormat | undefined;
  /** Where lines go; stdout when omitted. Tests pass a stream to read what was logged. */
  destination?: pino.DestinationStream;
  /** Colours in pretty lines. Default: when the terminal supports them. */
  colorize?: boolean;
}

export function createLogger({
  service,
  level = 'info',
  format,
  destination,
  colorize,
}: LoggerOptions): Logger {
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
  const chosen = format ?? (destination === undefined && process.stdout.isTTY ? 'pretty' : 'json');
  if (chosen === 'pretty') {
    const pretty = prettyStream({
      destination: destination ?? 1,
      sync: true,
      ...(colorize === undefined ? {} : { colorize }),
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,service',
      messageFormat: '{service}: {msg}',
      singleLine: true,
    });
    return pino(options, pretty);
  }
  return destination ? pino(options, destination) : pino(options);
}
