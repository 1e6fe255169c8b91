import { describe, expect, it } from 'vitest';
import { baseConfigSchema, ConfigError, loadConfig } from './config.js';
import { metricsPlan } from './metrics-endpoint.js';

const plan = (env: Record<string, string>) => metricsPlan(loadConfig(baseConfigSchema, env));

describe('metricsPlan', () => {
  it('without METRICS_PORT nothing is served; with it, the endpoint listens on METRICS_HOST (default loopback)', () => {
    expect(plan({})).toEqual({ endpoint: undefined });
    expect(plan({ OTEL_METRICS_EXPORTER: 'otlp' })).toEqual({ endpoint: undefined });
    expect(plan({ METRICS_PORT: '9101' })).toEqual({ endpoint: { host: '127.0.0.1', port: 9101 } });
    expect(
      plan({ METRICS_PORT: '9101', METRICS_HOST: '0.0.0.0', OTEL_METRICS_EXPORTER: 'prometheus' }),
    ).toEqual({ endpoint: { host: '0.0.0.0', port: 9101 } });
  });

  it.each([
    [{ OTEL_METRICS_EXPORTER: 'prometheus' }, 'OTEL_METRICS_EXPORTER', /needs METRICS_PORT/],
    [{ OTEL_METRICS_EXPORTER: 'otlp, prometheus' }, 'OTEL_METRICS_EXPORTER', /needs METRICS_PORT/],
    [{ METRICS_PORT: '9101', OTEL_METRICS_EXPORTER: 'otlp,console' }, 'METRICS_PORT', /otlp,console/],
    [{ METRICS_PORT: '9101', OTEL_METRICS_EXPORTER: 'none' }, 'METRICS_PORT', /none/],
  ])('when %j, start-up is refused naming %s', (env, variable, message) => {
    let thrown: unknown;
    try {
      plan(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as ConfigError).problems).toEqual([{ variable, message: expect.stringMatching(message) }]);
  });

  it.each(['0', '65536', 'http', '-1'])('METRICS_PORT=%s is not a port: a config error naming it', (port) => {
    expect(() => plan({ METRICS_PORT: port })).toThrow(/METRICS_PORT/);
  });
});
