import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GatewayDir,
  gatewayDir,
  removeGatewayDirs,
  runCli,
  startGatewayHttp,
} from './gateway-process.ts';
import type { Running } from './processes.ts';

/**
 * An upstream runs as the gateway's user, so it can read what the gateway's
 * process exposes in /proc: the environment it was started with and the files
 * it holds open. Secrets the configuration reads from the environment (bearer
 * tokens, the signing key, headers and variables for other upstreams) must
 * not be there.
 */

const PROBE = fileURLToPath(new URL('../fixtures/servers/settings-probe.ts', import.meta.url));
const PRO_TOKEN = 'pro-token-from-the-environment-5d1c2b';
const OTHER_SECRET = 'for-the-other-upstream-only-9a7e';

interface ParentView {
  ppid: number;
  environ: string | null;
  files: string[];
}

describe.skipIf(process.platform !== 'linux')('what an upstream can read of the gateway', () => {
  let gateway: Running;
  let paths: GatewayDir;
  let client: Client;
  let privatePem: string;

  beforeAll(async () => {
    paths = gatewayDir((config) => {
      config.upstreams = [
        { name: 'probe', stdio: { command: 'node', args: [PROBE] }, dialect: 'passthrough' },
        {
          name: 'other',
          stdio: { command: 'node', args: [PROBE], envFromEnv: { OTHER_SECRET: 'OTHER_UPSTREAM_SECRET' } },
          dialect: 'passthrough',
        },
      ];
      config.auth = {
        required: false,
        tokens: [{ name: 'pro', tokenEnv: 'PARENT_TEST_PRO_TOKEN', tier: 'pro' }],
      };
      config.signing = { keyEnv: 'PARENT_TEST_SIGNING_KEY' };
    });
    mkdirSync(join(paths.dir, 'keys'), { recursive: true });
    const keygen = await runCli(['keygen', '--out', join(paths.dir, 'keys', 'gateway')]);
    expect(keygen.code, keygen.stderr).toBe(0);
    privatePem = readFileSync(join(paths.dir, 'keys', 'gateway.private.pem'), 'utf8');
    gateway = await startGatewayHttp(['--config', paths.config, '--no-stdio'], {
      ...process.env,
      PARENT_TEST_PRO_TOKEN: PRO_TOKEN,
      PARENT_TEST_SIGNING_KEY: privatePem,
      OTHER_UPSTREAM_SECRET: OTHER_SECRET,
    });
    client = new Client({ name: 'parent-secrets', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(gateway.url), {
        requestInit: { headers: { authorization: `Bearer ${PRO_TOKEN}` } },
      }),
    );
  });

  afterAll(async () => {
    await client?.close();
    await gateway?.stop();
    removeGatewayDirs();
  });

  it('finds no token, key or other upstream’s variable in /proc/<gateway>/environ', async () => {
    const result = await client.callTool({ name: 'probe__parent', arguments: {} });
    const seen = result.structuredContent as unknown as ParentView;
    // The upstream could read it: the check is about what is there, not about access.
    expect(seen.environ).not.toBeNull();
    const environ = seen.environ ?? '';
    expect(environ).toContain('PATH=');
    for (const secret of [PRO_TOKEN, OTHER_SECRET, 'PRIVATE KEY', privatePem.split('\n')[1] as string])
      expect(environ).not.toContain(secret);
    // The hand-over file is gone by the time any upstream runs.
    const handover = /MCP_ENVELOPE_SECRETS_FILE=(.*)/.exec(environ)?.[1];
    if (handover) expect(() => readFileSync(handover)).toThrow();
    // Nor does the gateway hold a key file open for it to read through /proc/<pid>/fd.
    expect(seen.files.filter((file) => file.endsWith('.pem'))).toEqual([]);
  });

  it('still serves the callers of the token, and signs with the key it was given', async () => {
    const result = await client.callTool({
      name: 'probe__echo',
      arguments: { text: 'hi' },
      _meta: { capture_provenance: true },
    });
    expect(result.isError ?? false).toBe(false);
    const other = await client.callTool({ name: 'other__whoami', arguments: {} });
    expect(other.isError ?? false).toBe(false);
  });
});
