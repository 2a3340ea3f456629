import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { describe, expect, it } from 'vitest';
import { toPrometheusText } from '../../../src/gateway/telemetry/prometheus.ts';

class PullReader extends MetricReader {
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

async function exposition(record: (meter: ReturnType<MeterProvider['getMeter']>) => void): Promise<string> {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  record(provider.getMeter('test'));
  const { resourceMetrics } = await reader.collect();
  await provider.shutdown();
  return toPrometheusText(resourceMetrics);
}

describe('the Prometheus text format of collected metrics', () => {
  it('writes counters with _total, their labels escaped, as a parser reads them back', async () => {
    const text = await exposition((meter) => {
      const counter = meter.createCounter('gateway.calls', {
        description: 'calls\nanswered',
        unit: '{call}',
      });
      counter.add(2, { tool: 'echo', 'odd.key': 'a "quoted" \\ value\nnext' });
      counter.add(1, { tool: 'other' });
    });
    const [family] = parsePrometheusTextFormat(text);
    expect(family?.name).toBe('gateway_calls_total');
    expect(family?.type).toBe('COUNTER');
    expect(family?.help).toBe('calls\nanswered');
    expect(family?.metrics).toEqual(
      expect.arrayContaining([
        { labels: { tool: 'echo', odd_key: 'a "quoted" \\ value\nnext' }, value: '2' },
        { labels: { tool: 'other' }, value: '1' },
      ]),
    );
  });

  it('writes histograms as cumulative buckets with the unit in the name, sum and count', async () => {
    const text = await exposition((meter) => {
      const histogram = meter.createHistogram('mcp.server.operation.duration', {
        unit: 's',
        advice: { explicitBucketBoundaries: [0.01, 0.1, 1] },
      });
      for (const seconds of [0.005, 0.05, 0.05, 5]) histogram.record(seconds);
    });
    const [family] = parsePrometheusTextFormat(text);
    expect(family?.name).toBe('mcp_server_operation_duration_seconds');
    expect(family?.type).toBe('HISTOGRAM');
    const [sample] = family?.metrics ?? [];
    expect(sample?.buckets).toEqual({ '0.01': '1', '0.1': '3', '1': '3', '+Inf': '4' });
    expect(sample?.count).toBe('4');
    expect(Number(sample?.sum)).toBeCloseTo(5.105);
  });

  it('gives every series of a labelled histogram its labels, le last', async () => {
    const text = await exposition((meter) => {
      const histogram = meter.createHistogram('op.duration', {
        unit: 's',
        advice: { explicitBucketBoundaries: [1] },
      });
      histogram.record(0.5, { tool: 'a' });
      histogram.record(2, { tool: 'b' });
    });
    // The parser merges a histogram's label sets (prom2json's shape), so the lines are read as written.
    expect(text.split('\n').filter((line) => line.startsWith('op_duration_seconds'))).toEqual([
      'op_duration_seconds_bucket{tool="a",le="1"} 1',
      'op_duration_seconds_bucket{tool="a",le="+Inf"} 1',
      'op_duration_seconds_sum{tool="a"} 0.5',
      'op_duration_seconds_count{tool="a"} 1',
      'op_duration_seconds_bucket{tool="b",le="1"} 0',
      'op_duration_seconds_bucket{tool="b",le="+Inf"} 1',
      'op_duration_seconds_sum{tool="b"} 2',
      'op_duration_seconds_count{tool="b"} 1',
    ]);
    expect(parsePrometheusTextFormat(text)[0]?.type).toBe('HISTOGRAM');
  });

  it('writes gauges and up-down counters as gauges, and nothing for no metrics', async () => {
    const text = await exposition((meter) => {
      meter
        .createObservableGauge('upstream.state')
        .addCallback((result) => result.observe(1, { state: 'ready' }));
      meter.createUpDownCounter('open.sessions').add(-2);
    });
    const families = parsePrometheusTextFormat(text);
    expect(families.map(({ name, type }) => [name, type])).toEqual([
      ['upstream_state', 'GAUGE'],
      ['open_sessions', 'GAUGE'],
    ]);
    expect(families[1]?.metrics).toEqual([{ value: '-2' }]);
    expect(await exposition(() => {})).toBe('');
  });
});
