import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { signDownloadId, verifyDownloadId } from '../../src/artifacts/download-ids.ts';
import { Keyring } from '../../src/artifacts/keyring.ts';
import { runCli } from '../helpers/cli.ts';

const GRANT = '0123456789abcdef0123456789abcdef';
const dirs: string[] = [];
function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'artifacts-cli-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('mcp-envelope artifacts rotate-key', () => {
  it('makes a new key; links signed with the old one keep verifying', async () => {
    const dir = folder();
    // A running gateway's keyring, which signed a link before the rotation.
    const gateway = Keyring.inFolder({ dir: join(dir, 'artifacts') });
    const before = signDownloadId(GRANT, Date.now() + 60_000, gateway);
    const run = await runCli(['artifacts', 'rotate-key', '--dir', 'artifacts', '--json'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout);
    expect(out).toMatchObject({
      retired: before.split('.')[2],
      pruned: [],
      file: join(dir, 'artifacts', 'keys.json'),
    });
    expect(out.current).not.toBe(out.retired);
    expect(statSync(out.file).mode & 0o777).toBe(0o600);
    // The gateway signs with the new key at once, and still verifies the old link.
    expect(signDownloadId(GRANT, Date.now() + 60_000, gateway).split('.')[2]).toBe(out.current);
    expect(verifyDownloadId(before, gateway).ok).toBe(true);
  });

  it('prunes keys whose links have all expired', async () => {
    const dir = folder();
    expect((await runCli(['artifacts', 'rotate-key', '--dir', dir])).code).toBe(0);
    // Mark the first key retired long ago: every link it signed has expired.
    const file = join(dir, 'keys.json');
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    stored.keys[0].retired_at = '2020-01-01T00:00:00.000Z';
    stored.keys.push({ ...stored.keys[0], id: 'kold' });
    stored.keys[0].retired_at = undefined;
    writeFileSync(file, JSON.stringify(stored));
    const human = await runCli(['artifacts', 'rotate-key', '--dir', dir]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^new key: +k[0-9a-f]{8}$/m);
    expect(human.stdout).toMatch(/^pruned: +kold$/m);
    expect(readFileSync(file, 'utf8')).not.toContain('kold');
  });

  it('refuses a bad --ttl-ms and a damaged keys file with clear codes', async () => {
    const dir = folder();
    const bad = await runCli(['artifacts', 'rotate-key', '--dir', dir, '--ttl-ms', 'soon']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('USAGE_ERROR');
    writeFileSync(join(dir, 'keys.json'), 'not json');
    const damaged = await runCli(['artifacts', 'rotate-key', '--dir', dir]);
    expect(damaged.code).not.toBe(0);
    expect(damaged.stderr).toContain('ARTIFACT_STORE_UNAVAILABLE');
    expect((await runCli(['artifacts'])).stderr).toContain('rotate-key');
  });
});
