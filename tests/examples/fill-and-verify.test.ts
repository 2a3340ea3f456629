import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayDir,
  gatewayDir,
  removeGatewayDirs,
  runCli,
  startGatewayHttp,
} from '../gateway/gateway-process.ts';
import { NODE, ROOT, type Running } from '../gateway/processes.ts';

/**
 * The README's quick start for documents: the example gateway (its template
 * server sharing the gateway's artifact folder and ledger), on a port of its
 * own choosing, then examples/fill-and-verify.ts, then `mcp-envelope verify`
 * on what it wrote.
 */

const SCRIPT = fileURLToPath(new URL('../../examples/fill-and-verify.ts', import.meta.url));
const run = promisify(execFile);

describe('examples/fill-and-verify.ts against the example gateway', () => {
  let paths: GatewayDir;
  let gateway: Running;
  let out: string;

  beforeAll(async () => {
    // The example configuration as it is: the template server shares the gateway's store (`"artifacts":
    // "shared"`), wherever this copy keeps it, and learns the port the gateway listens on.
    paths = gatewayDir();
    gateway = await startGatewayHttp(['--config', paths.config]);
    out = join(paths.dir, 'downloads');
  }, 60_000);

  afterAll(async () => {
    await gateway?.stop();
    removeGatewayDirs();
  });

  it('downloads the filled document from the gateway, and it verifies against its record', async () => {
    const { stdout } = await run(NODE, [SCRIPT, gateway.url, out], { cwd: ROOT });
    expect(stdout).toMatch(/^run [0-9a-f-]+: meeting-minutes\.docx, \d+ bytes/);
    // The template server's own link names the port this gateway chose, not the example's 8787.
    expect(stdout).toContain(`link ${new URL(gateway.url).origin}/api/download?id=`);
    expect(readdirSync(out).sort()).toEqual(['meeting-minutes.docx', 'record.json']);
    const verified = await runCli(['verify', join(out, 'record.json'), '--artifacts', out]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    // The record is the ledger's too.
    const record = JSON.parse(readFileSync(join(out, 'record.json'), 'utf8')) as { run_id: string };
    const shown = await runCli(['ledger', 'show', record.run_id, '--db', paths.ledger, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(record.run_id);
  });
});
