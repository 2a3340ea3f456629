import { describe, expect, it } from 'vitest';
import {
  createIdSource,
  DeterministicIds,
  hexRequestId,
  prefixedRequestId,
  RandomIds,
  randomRunId,
} from '../../../src/ids/index.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('ids', () => {
  it('random run ids are UUIDv4 and differ', () => {
    const ids = new Set(Array.from({ length: 50 }, () => randomRunId()));
    expect(ids.size).toBe(50);
    for (const id of ids) expect(id).toMatch(UUID_V4);
    expect(new RandomIds().runId()).toMatch(UUID_V4);
    expect(createIdSource().deterministic).toBe(false);
  });

  it('deterministic ids are UUIDv5: same seed and calls give the same ids', () => {
    const a = new DeterministicIds('seed');
    const b = createIdSource('seed');
    expect(b.deterministic).toBe(true);
    const first = [a.runId({ x: 1, y: 2 }), a.runId('next')];
    const second = [b.runId({ y: 2, x: 1 }), b.runId('next')];
    expect(first).toEqual(second);
    for (const id of first) expect(id).toMatch(UUID_V5);
  });

  it('deterministic ids change with the seed, the content and the sequence', () => {
    const one = new DeterministicIds('seed').runId('x');
    expect(new DeterministicIds('other').runId('x')).not.toBe(one);
    expect(new DeterministicIds('seed').runId('y')).not.toBe(one);
    const source = new DeterministicIds('seed');
    expect(source.runId('x')).toBe(one);
    expect(source.runId('x')).not.toBe(one);
  });

  it('request ids have their documented forms', () => {
    expect(hexRequestId()).toMatch(/^[0-9a-f]{32}$/);
    expect(prefixedRequestId()).toMatch(/^req_[0-9a-f]{32}$/);
  });
});
