/**
 * A service for the metrics-endpoint tests: at start it adds 1 to a counter named by METRIC_NAME on the
 * global meter, so each instance's /metrics shows a name of its own.
 */
import { metrics } from '@opentelemetry/api';
import { runService } from '../service.js';

const name = process.env.METRIC_NAME ?? 'fixture_started';

await runService({
  name: 'metrics-fixture',
  start() {
    metrics.getMeter('metrics-fixture').createCounter(name).add(1);
    return Promise.resolve({ stop: () => Promise.resolve() });
  },
});
