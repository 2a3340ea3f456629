import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayDir, gatewayDir, runCli } from './gateway-process.ts';

describe('gateway on an address it cannot take', () => {
  let occupier: Server;
  let port: number;
  let dir: GatewayDir;

  beforeAll(async () => {
    occupier = createServer();
    await new Promise<void>((resolve) => occupier.listen(0, '127.0.0.1', resolve));
    port = (occupier.address() as { port: number }).port;
    dir = gatewayDir();
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => occupier.close(() => resolve()));
    rmSync(dir.dir, { recursive: true, force: true });
  });

  it('exits 2 with LISTEN_FAILED naming the address, instead of an internal error', async () => {
    const run = await runCli(['gateway', '--config', dir.config, '--http', `127.0.0.1:${port}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('error[LISTEN_FAILED]');
    expect(run.stderr).toContain(`127.0.0.1:${port}`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
