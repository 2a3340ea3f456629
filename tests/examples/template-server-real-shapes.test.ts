import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyring, signDownloadId } from '../../src/artifacts/index.ts';
import { type Connected, connectExample, EXAMPLES, firstText } from './spawn.ts';

/**
 * The reference template server against what OpenAgreements' real hosted
 * server answered (captures in tests/fixtures/real/openagreements, the
 * 2026-02-19 version, which had all four tools and all three return modes):
 * for each captured call, the same call made here answers with the same
 * top-level members, every member the real `data` had, and the same error
 * code. Template ids differ (ours are our own templates); arguments are sent
 * as the real client sent them, `template` included.
 */

const FIXTURES = new URL('../fixtures/real/openagreements/', import.meta.url);
const SERVER = `${EXAMPLES}template-server/server.ts`;
/** The real server's template, and ours with the same role (a mutual NDA cover page). */
const TEMPLATE_IDS: Record<string, string> = { 'common-paper-mutual-nda': 'mutual-nda-cover' };
const VALUES = { party_1_name: 'Acme Corp', party_2_name: 'Beta LLC', effective_date: '2026-11-24' };

interface Capture {
  request: { name: string; arguments: Record<string, unknown> };
  result: { content: { type: string; text: string }[] } | null;
}

type Envelope = Record<string, unknown> & {
  data?: Record<string, unknown>;
  error?: { code: string };
};

function captures(): [string, Capture][] {
  return readdirSync(FIXTURES)
    .filter((name) => name.startsWith('hosted-api-mcp-2026-02-19.') && !name.includes('tools-list'))
    .map((name) => [name, JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as Capture]);
}

let server: Connected;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'template-server-shapes-'));
  server = await connectExample({
    command: process.execPath,
    args: [SERVER],
    env: {
      PATH: process.env.PATH ?? '',
      TEMPLATE_SERVER_ARTIFACTS_DIR: dir,
      // The hosted server always had a download route; without one, links are not handed out.
      TEMPLATE_SERVER_DOWNLOAD_URL: 'http://127.0.0.1:8787/api/download',
    },
  });
});

afterAll(async () => {
  await server?.client.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The capture's arguments, with our template id and values, and a download id of ours where it had one of its own. */
async function ourArguments(capture: Capture, name: string): Promise<Record<string, unknown>> {
  const args = { ...capture.request.arguments };
  for (const key of ['template', 'template_id'] as const) {
    const id = args[key];
    if (typeof id === 'string' && TEMPLATE_IDS[id]) args[key] = TEMPLATE_IDS[id];
  }
  if (args.values !== undefined) args.values = VALUES;
  if (name.includes('download-link-not-found')) {
    // Signed by this server's key, for a grant its store never had: what the real id was to the real server.
    args.download_id = signDownloadId(
      randomBytes(16).toString('hex'),
      Date.now() + 60_000,
      Keyring.inFolder({ dir }),
    );
  }
  if (name.includes('download_filled.success')) {
    const filled = await callEnvelope('fill_template', { template_id: 'mutual-nda-cover', values: VALUES });
    args.download_id = filled.data?.download_id;
  }
  return args;
}

async function callEnvelope(name: string, args: Record<string, unknown>): Promise<Envelope> {
  const result = await server.client.callTool({ name, arguments: args });
  return JSON.parse(firstText(result)) as Envelope;
}

describe('the template server answers as the real hosted server did', () => {
  const cases = captures().filter(
    ([name]) => !name.includes('clock-shifted') && !name.includes('no_such_tool'),
  );

  it('has captures to compare with', () => {
    expect(cases.length).toBeGreaterThanOrEqual(12);
  });

  it.each(cases)('%s', async (name, capture) => {
    const real = JSON.parse(capture.result?.content[0]?.text ?? 'null') as Envelope;
    const ours = await callEnvelope(capture.request.name, await ourArguments(capture, name));
    expect(Object.keys(ours).sort()).toEqual(Object.keys(real).sort());
    expect(ours.ok).toBe(real.ok);
    expect(ours.tool).toBe(real.tool);
    if (real.error) expect(ours.error?.code).toBe(real.error.code);
    if (real.data)
      expect(Object.keys(ours.data ?? {})).toEqual(expect.arrayContaining(Object.keys(real.data)));
  });
});
