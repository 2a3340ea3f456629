import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger, verifyLedger } from '../../../src/ledger/index.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RECORDS = 150;

describe('a writer process and a reader side by side', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-writer-'));
  const file = join(dir, 'ledger.sqlite');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lets a reader query while another process writes, and loses nothing', async () => {
    // The writer runs the TypeScript sources directly (Node strips the types).
    const script = `
      import { Ledger } from ${JSON.stringify(`${ROOT}src/ledger/index.ts`)};
      import { callRecord } from ${JSON.stringify(`${ROOT}tests/unit/ledger/fixtures.ts`)};
      const ledger = Ledger.open(process.argv[1]);
      for (let i = 0; i < ${RECORDS}; i++) {
        const id = '00000000-0000-4000-8000-' + String(i).padStart(12, '0');
        ledger.insert(callRecord(id, i % 2 ? 'odd' : 'even').envelope, { upstream: 'w' });
        process.stdout.write(i + '\\n');
      }
      ledger.close();
    `;
    const writer = spawn(process.execPath, ['--input-type=module', '-e', script, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    writer.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = once(writer, 'exit');

    // Read (read-only, as the CLI reads) each time the writer reports inserts, while it goes on; every count seen must be a
    // prefix of storage order. Its output ends when it does.
    const seen: number[] = [];
    for await (const _inserted of writer.stdout) {
      const reader = Ledger.open(file, { readOnly: true });
      try {
        const entries = reader.list({ limit: RECORDS });
        seen.push(entries.length);
        expect(entries.map((entry) => entry.seq)).toEqual(entries.map((_, i) => entries.length - i));
      } finally {
        reader.close();
      }
    }
    const [code] = await exited;
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));

    const ledger = Ledger.open(file, { readOnly: true });
    try {
      expect(ledger.count()).toBe(RECORDS);
      expect(ledger.list({ tool: 'odd', limit: RECORDS })).toHaveLength(RECORDS / 2);
      const report = await verifyLedger(ledger);
      expect(report).toMatchObject({ ok: true, total: RECORDS, failed: 0 });
    } finally {
      ledger.close();
    }
  });
});
