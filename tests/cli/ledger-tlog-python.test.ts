/**
 * An independent verifier (tests/fixtures/tlog_verify.py, Python's standard
 * library only, written from ARCHITECTURE's "Transparency log") accepts the
 * proofs and checkpoints the CLI prints, and refuses altered ones.
 */
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runBin } from '../helpers/cli.ts';
import { callRecord } from '../unit/ledger/fixtures.ts';

const VERIFIER = fileURLToPath(new URL('../fixtures/tlog_verify.py', import.meta.url));
const python = spawnSync('python3', ['--version'], { encoding: 'utf8' });
const hasPython = python.error === undefined && python.status === 0;
// Skipped on a machine without python3; CI (.ci/run installs it) always runs it.
const REQUIRE_PYTHON = Boolean(process.env.CI);
const SKIP = !hasPython && !REQUIRE_PYTHON;
if (SKIP) {
  console.warn('skipping the independent Python verifier of ledger proofs: no python3 on PATH');
}

const dir = mkdtempSync(join(tmpdir(), 'ledger-tlog-python-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cli = async (...args: string[]) => {
  const run = await runBin(args, { cwd: dir });
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return run.stdout;
};
const verifier = (...args: string[]) =>
  spawnSync('python3', [VERIFIER, ...args], { cwd: dir, encoding: 'utf8' });

describe.skipIf(SKIP)('the CLI’s proofs, checked by an independent Python verifier', () => {
  it('verifies an inclusion proof and a consistency proof, and refuses altered ones', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    writeFileSync(join(dir, 'k.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
    writeFileSync(join(dir, 'k.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    for (let i = 1; i <= 7; i++) {
      const id = `00000000-0000-4000-8000-00000000000${i}`;
      writeFileSync(join(dir, `r${i}.json`), JSON.stringify(callRecord(id).envelope));
      await cli('ledger', 'add', `r${i}.json`, '--db', 'l.sqlite', '--upstream', 'up');
      if (i === 3)
        writeFileSync(
          join(dir, 'old.txt'),
          await cli('ledger', 'checkpoint', '--db', 'l.sqlite', '--private-key', 'k.pem'),
        );
    }
    writeFileSync(
      join(dir, 'new.txt'),
      await cli(
        'ledger',
        'checkpoint',
        '--db',
        'l.sqlite',
        '--private-key',
        'k.pem',
        '--origin',
        'example.org/ledger',
      ),
    );
    writeFileSync(
      join(dir, 'proof.json'),
      await cli('ledger', 'prove', '--db', 'l.sqlite', '00000000-0000-4000-8000-000000000005'),
    );
    const inclusion = verifier('inclusion', 'proof.json', 'k.pub');
    expect(inclusion.stdout).toBe(
      'OK leaf 4 (run 00000000-0000-4000-8000-000000000005, tool echo) is in example.org/ledger at size 7\n',
    );
    expect(inclusion.status).toBe(0);

    const proof = JSON.parse(readFileSync(join(dir, 'proof.json'), 'utf8'));
    const leaf = Buffer.from(proof.leaf, 'base64').toString().replace('"upstream":"up"', '"upstream":"uq"');
    writeFileSync(
      join(dir, 'altered.json'),
      JSON.stringify({ ...proof, leaf: Buffer.from(leaf).toString('base64') }),
    );
    expect(verifier('inclusion', 'altered.json', 'k.pub').stdout).toBe(
      "FAIL: inclusion proof does not lead to the checkpoint's root\n",
    );
    const other = generateKeyPairSync('ed25519').publicKey;
    writeFileSync(join(dir, 'other.pub'), other.export({ type: 'spki', format: 'pem' }));
    expect(verifier('inclusion', 'proof.json', 'other.pub').stdout).toBe(
      'FAIL: checkpoint: no signature by the given key verifies\n',
    );

    // Consistency between two checkpoints of one origin.
    writeFileSync(
      join(dir, 'old2.txt'),
      await cli(
        'ledger',
        'checkpoint',
        '--db',
        'l.sqlite',
        '--private-key',
        'k.pem',
        '--origin',
        'example.org/ledger',
      ),
    );
    for (let i = 8; i <= 9; i++) {
      writeFileSync(
        join(dir, `r${i}.json`),
        JSON.stringify(callRecord(`00000000-0000-4000-8000-00000000000${i}`).envelope),
      );
      await cli('ledger', 'add', `r${i}.json`, '--db', 'l.sqlite');
    }
    writeFileSync(
      join(dir, 'new2.txt'),
      await cli(
        'ledger',
        'checkpoint',
        '--db',
        'l.sqlite',
        '--private-key',
        'k.pem',
        '--origin',
        'example.org/ledger',
      ),
    );
    writeFileSync(
      join(dir, 'consistency.json'),
      await cli('ledger', 'consistency', 'old2.txt', 'new2.txt', '--db', 'l.sqlite', '--public-key', 'k.pub'),
    );
    const consistency = verifier('consistency', 'consistency.json', 'k.pub');
    expect(consistency.stdout).toBe('OK example.org/ledger at size 7 is a prefix of size 9\n');
    const bent = JSON.parse(readFileSync(join(dir, 'consistency.json'), 'utf8'));
    bent.proof[0] = Buffer.alloc(32).toString('base64');
    writeFileSync(join(dir, 'bent.json'), JSON.stringify(bent));
    expect(verifier('consistency', 'bent.json', 'k.pub').stdout).toBe(
      'FAIL: consistency proof does not hold\n',
    );
  });
});
