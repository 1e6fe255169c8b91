/**
 * A metric reader for tests: collects on demand and flattens what it got into data points by metric name.
 * Passed to `startTelemetry({ metricReaders })` (or a MeterProvider), it reads the real SDK's aggregation.
 */
import type { Attributes } from '@opentelemetry/api';
import { DataPointType, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';

/** A counter's point is its sum; a histogram's its count and sum. */
export interface CollectedPoint {
  attributes: Attributes;
  value: number | { count: number; sum: number };
}

export class CollectingMetricReader extends MetricReader {
  /** Every data point of the named metric collected now. */
  async points(name: string): Promise<CollectedPoint[]> {
    return (await this.metrics()).filter((metric) => metric.descriptor.name === name).flatMap(pointsOf);
  }

  async metrics(): Promise<MetricData[]> {
    const { resourceMetrics, errors } = await this.collect();
    if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
    return resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
  }

  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

function pointsOf(metric: MetricData): CollectedPoint[] {
  if (metric.dataPointType === DataPointType.HISTOGRAM) {
    return metric.dataPoints.map(({ attributes, value }) => ({
      attributes,
      value: { count: value.count, sum: value.sum ?? 0 },
    }));
  }
  if (metric.dataPointType === DataPointType.SUM || metric.dataPointType === DataPointType.GAUGE) {
    return metric.dataPoints.map(({ attributes, value }) => ({ attributes, value }));
  }
  throw new Error(`unexpected metric type for ${metric.descriptor.name}`);
}
