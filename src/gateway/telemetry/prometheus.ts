import type { Attributes } from '@opentelemetry/api';
import { DataPointType, type MetricData, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/**
 * The Prometheus text exposition format (0.0.4) of what a metric reader
 * collected, as the OpenTelemetry-to-Prometheus compatibility rules name it:
 * dots and other characters become `_`, the unit (`s` → `_seconds`) and
 * `_total` for monotonic sums are appended, histograms are written as
 * cumulative `_bucket{le}` series with `_sum` and `_count`. No exporter
 * package for it is installed, and the format is small.
 */

const UNIT_SUFFIXES: Record<string, string> = { s: 'seconds', ms: 'milliseconds', By: 'bytes', '1': 'ratio' };

function sanitize(name: string): string {
  const clean = name.replace(/[^a-zA-Z0-9_:]/g, '_').replace(/_+/g, '_');
  return /^[0-9]/.test(clean) ? `_${clean}` : clean;
}

/** The metric's Prometheus name: sanitized, its unit and (for counters) `_total` appended. */
export function prometheusName(metric: MetricData): string {
  let name = sanitize(metric.descriptor.name);
  const unit = metric.descriptor.unit;
  // Units in braces (`{call}`) are annotations, not units.
  const suffix = unit && !unit.startsWith('{') ? (UNIT_SUFFIXES[unit] ?? sanitize(unit)) : undefined;
  if (suffix && !name.endsWith(`_${suffix}`)) name = `${name}_${suffix}`;
  if (metric.dataPointType === DataPointType.SUM && metric.isMonotonic && !name.endsWith('_total'))
    name = `${name}_total`;
  return name;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labels(attributes: Attributes, extra?: [string, string]): string {
  const parts = Object.entries(attributes)
    .filter(([, value]) => value !== undefined && value !== null)
    .map(([key, value]) => `${sanitize(key)}="${escapeLabel(String(value))}"`);
  if (extra) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`);
  return parts.length > 0 ? `{${parts.join(',')}}` : '';
}

function number(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

function typeOf(metric: MetricData): string {
  switch (metric.dataPointType) {
    case DataPointType.HISTOGRAM:
      return 'histogram';
    case DataPointType.SUM:
      return metric.isMonotonic ? 'counter' : 'gauge';
    default:
      return 'gauge';
  }
}

function writeMetric(metric: MetricData, lines: string[]): void {
  const name = prometheusName(metric);
  if (metric.descriptor.description)
    lines.push(`# HELP ${name} ${escapeHelp(metric.descriptor.description)}`);
  lines.push(`# TYPE ${name} ${typeOf(metric)}`);
  if (metric.dataPointType === DataPointType.HISTOGRAM) {
    for (const point of metric.dataPoints) {
      const { boundaries, counts } = point.value.buckets;
      let cumulative = 0;
      boundaries.forEach((boundary, index) => {
        cumulative += counts[index] ?? 0;
        lines.push(`${name}_bucket${labels(point.attributes, ['le', number(boundary)])} ${cumulative}`);
      });
      lines.push(`${name}_bucket${labels(point.attributes, ['le', '+Inf'])} ${point.value.count}`);
      lines.push(`${name}_sum${labels(point.attributes)} ${number(point.value.sum ?? 0)}`);
      lines.push(`${name}_count${labels(point.attributes)} ${point.value.count}`);
    }
    return;
  }
  if (metric.dataPointType === DataPointType.EXPONENTIAL_HISTOGRAM) return;
  for (const point of metric.dataPoints)
    lines.push(`${name}${labels(point.attributes)} ${number(point.value)}`);
}

/** Every metric of a collection in the text format, one family per metric name. */
export function toPrometheusText(collected: ResourceMetrics): string {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const scope of collected.scopeMetrics) {
    for (const metric of scope.metrics) {
      // A name met twice (two scopes) would make a second family, which the format forbids.
      const name = prometheusName(metric);
      if (seen.has(name)) continue;
      seen.add(name);
      writeMetric(metric, lines);
    }
  }
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}
