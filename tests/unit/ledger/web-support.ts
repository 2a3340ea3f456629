/** A ledger with hostile content and lineage, and a raw HTTP client, for the viewer's tests. */
import { generateKeyPairSync } from 'node:crypto';
import { request } from 'node:http';
import { Ledger, writeCheckpoint } from '../../../src/ledger/index.ts';
import { buildCallRecord, DEFAULT_CONTROLS, signRecord } from '../../../src/provenance/index.ts';
import type { ProvRecord } from '../../../src/provenance/record.ts';

export const keys = generateKeyPairSync('ed25519');

/** Markup that must only ever appear escaped. */
export const HOSTILE = {
  tool: '<script>alert(1)</script>',
  upstream: '"><img src=x onerror=alert(1)>',
  result: '</script><script>alert(2)</script>',
  message: '<svg onload=alert(3)>',
};

export const runId = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;

/** A signed record with an evidence anchor into its result, optionally with parents. */
export function record(i: number, tool: string, result: unknown, parents: string[] = []): ProvRecord {
  const built = buildCallRecord({
    runId: runId(i),
    tool: { name: tool, version: '1.0.0', adapter: 'mcp' },
    action: 'wrapped',
    inputs: [],
    result,
    attached: true,
    parents,
    controls: { ...DEFAULT_CONTROLS, captureProvenance: true, provenanceMode: 'full' },
  });
  const withEvidence: ProvRecord = {
    ...built,
    evidence: [{ schema_version: 'evidence.v0.1', field: 'answer', source: 'artifact:result#json:/text' }],
    methods: [...built.methods, 'engine.extract.evidence.json_pointer'],
  };
  return signRecord(withEvidence, keys.privateKey);
}

/**
 * `count` calls, stored as envelopes: every third one failed (errors[] with a
 * code), tools alternate between `echo` and the hostile name, principals
 * between alice and bob; run i names run i-1 as its parent. A checkpoint is
 * written after `checkpointAt` entries. `now` steps one minute per call from
 * 2026-01-01T00:00Z.
 */
export function buildLedger(file: string, count: number, checkpointAt = count): Ledger {
  let minute = 0;
  const ledger = Ledger.open(file, { now: () => new Date(Date.UTC(2026, 0, 1, 0, minute++)) });
  for (let i = 1; i <= count; i++) {
    const tool = i % 2 === 0 ? HOSTILE.tool : 'echo';
    const result = { text: i === 2 ? HOSTILE.result : `answer ${i}` };
    const provenance = record(i, tool, result, i > 1 ? [runId(i - 1)] : []);
    const failed = i % 3 === 0;
    ledger.insert(
      {
        schema_version: 'mcp.envelope.v0.1',
        result,
        provenance,
        ...(failed
          ? { errors: [{ code: i === 3 ? HOSTILE.upstream : 'UPSTREAM_TIMEOUT', message: HOSTILE.message }] }
          : {}),
      },
      { upstream: i === 2 ? HOSTILE.upstream : 'up', principal: i % 2 === 0 ? 'token:bob' : 'token:alice' },
    );
    if (i === checkpointAt) writeCheckpoint(ledger, keys.privateKey);
  }
  return ledger;
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with exactly the headers given (Host defaults to the address). */
export function raw(
  base: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: { host: url.host, ...options.headers } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The body with the viewer's own script tag taken out: what is left must hold no script at all. */
export function withoutOwnScript(body: string): string {
  return body.replaceAll('<script type="module" src="/ledger/assets/verify.js"></script>', '');
}
