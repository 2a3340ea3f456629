/**
 * Call-log write throughput against plain pino writing the same line shape to
 * the same kind of asynchronous destination, without digests. Each call-log
 * line digests its arguments and result as the call's report does (canonical
 * JSON, SHA-256), so the ratio is mostly the cost of those digests.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { CallLog } from '../src/gateway/operations/call-log.ts';
import { type CallSummary, digestOf } from '../src/mcp/pipeline.ts';

const N = 20_000;
const ROUNDS = 5;

const args = { text: 'x'.repeat(1000) };
const result = { schema_version: 'mcp.envelope.v0.1', result: 'x'.repeat(1000) };
const summary: CallSummary = {
  tool: 'echo',
  dialect: 'legacy',
  outcome: 'ok',
  failure: null,
  action: 'wrapped',
  code: null,
  requestId: null,
  durationMs: 1,
  argumentsDigest: null,
  resultDigest: null,
  resultDialect: 'legacy',
  resultVersion: null,
  sourceDialect: 'legacy',
  sourceVersion: null,
  toolRan: true,
  provenance: null,
  losses: 0,
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const dir = mkdtempSync(join(tmpdir(), 'call-log-bench-'));
const ours: number[] = [];
const peer: number[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const log = new CallLog({ dir, server: 'bench', instance: `ours-${round}` });
    let start = performance.now();
    for (let i = 0; i < N; i++) {
      log.write(
        {
          ...summary,
          requestId: `${i}`,
          argumentsDigest: digestOf(args),
          resultDigest: digestOf(result),
        },
        { upstream: 'legacy', transport: 'stdio', arguments: args },
      );
    }
    await log.close();
    ours.push(N / ((performance.now() - start) / 1000));

    const destination = pino.destination({
      dest: join(dir, `peer-${round}.jsonl`),
      sync: false,
      mkdir: true,
    });
    const logger = pino({ base: null, timestamp: pino.stdTimeFunctions.isoTime }, destination);
    start = performance.now();
    for (let i = 0; i < N; i++) {
      logger.info({
        traceId: 'a'.repeat(32),
        spanId: 'b'.repeat(16),
        requestId: i,
        tool: 'echo',
        upstream: 'legacy',
        dialect: 'legacy',
        outcome: 'ok',
        code: null,
        durationMs: 1,
        transport: 'stdio',
        route: null,
        argumentsDigest: null,
        resultDigest: null,
      });
    }
    const closed = once(destination, 'close');
    destination.end();
    await closed;
    peer.push(N / ((performance.now() - start) / 1000));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const a = median(ours);
const b = median(peer);
console.log(`call log write (2 canonical sha256 digests, 1 KB each): ${a.toFixed(0)} lines/s`);
console.log(`plain pino, same line shape, no digests:                ${b.toFixed(0)} lines/s`);
console.log(`ratio call-log/pino: ${(a / b).toFixed(2)} (median of ${ROUNDS} rounds of ${N})`);
