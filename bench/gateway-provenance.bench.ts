/**
 * What full provenance costs a gateway: calls/s of a 1 KB echo at 16 in flight
 * through two gateway processes over stdio, in the same envelope mode
 * (prov-v0.1) and with the same upstream, one with every record signed, full
 * provenance (artifacts digested, record digested) and each record filed in the
 * ledger's transparency log, the other with provenance off and no ledger. The
 * clients opt in to provenance on every call. Rounds take the two in turn, so a
 * drift of the machine weighs on both alike. Target: ratio >= 0.8.
 *
 * Client, gateway and upstream share the machine's cores, so the calls/s of
 * each setup is bounded by their CPU time per call together as much as by the
 * gateway's: the bench also prints the CPU time per call of each process
 * (Linux /proc), which a busy machine changes far less than calls/s.
 * Run: node bench/gateway-provenance.bench.ts
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { Ledger } from '../src/ledger/index.ts';
import { callsPerSecond, cpuMs, processTree } from './support.ts';

const root = fileURLToPath(new URL('../', import.meta.url));
const GATEWAY = fileURLToPath(new URL('../bin/mcp-envelope', import.meta.url));
const UPSTREAM = fileURLToPath(new URL('../tests/fixtures/servers/everything.ts', import.meta.url));
const WARMUP = 1500;
const ROUNDS = 6;
const PER_ROUND = 1000;
const IN_FLIGHT = 16;
const PAYLOAD = 'x'.repeat(1024);

const dir = mkdtempSync(join(tmpdir(), 'gateway-provenance-bench-'));

function config(name: string, provenance: boolean): string {
  const file = join(dir, `${name}.json`);
  if (provenance) {
    const { privateKey } = generateKeyPairSync('ed25519');
    writeFileSync(join(dir, 'signing.pem'), privateKey.export({ type: 'pkcs8', format: 'pem' }), {
      mode: 0o600,
    });
  }
  writeFileSync(
    file,
    JSON.stringify({
      upstreams: [
        {
          name: 'bench',
          stdio: { command: 'node', args: [UPSTREAM] },
          dialect: 'prov-v0.1',
          provenance: provenance
            ? { enabled: true, mode: 'full', captureArtifacts: true }
            : { enabled: false },
        },
      ],
      listen: { stdio: true, http: false },
      ledger: provenance
        ? { enabled: true, path: `${name}.sqlite`, checkpointIntervalMs: 1000 }
        : { enabled: false },
      logs: { enabled: false },
      ...(provenance ? { signing: { keyFile: 'signing.pem' } } : {}),
    }),
  );
  return file;
}

interface Connected {
  client: Client;
  /** The gateway's pid. */
  pid: number;
}

async function connect(configFile: string): Promise<Connected> {
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [GATEWAY, 'gateway', '--config', configFile],
    cwd: root,
  });
  await client.connect(transport);
  return { client, pid: transport.pid as number };
}

async function echo(client: Client): Promise<void> {
  const result = await client.callTool({
    name: 'echo',
    arguments: { text: PAYLOAD },
    _meta: { capture_provenance: true },
  });
  const text = (result.content as { text?: string }[])[0]?.text;
  if (!text?.includes(PAYLOAD)) throw new Error('echo came back wrong');
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

const full = await connect(config('full', true));
const off = await connect(config('off', false));
try {
  for (const { client } of [full, off]) await callsPerSecond(() => echo(client), WARMUP, IN_FLIGHT);
  const rates = { full: [] as number[], off: [] as number[] };
  // CPU ms per setup over the measured rounds: [client, gateway, upstream, gateway's main thread].
  const cpu = { full: [0, 0, 0, 0], off: [0, 0, 0, 0] };
  const measure = async (setup: Connected, into: number[], cpuInto: number[]) => {
    const upstreams = processTree(setup.pid).slice(1);
    const read = () => [
      (process.cpuUsage().user + process.cpuUsage().system) / 1000,
      cpuMs(setup.pid) ?? 0,
      upstreams.reduce((sum, pid) => sum + (cpuMs(pid) ?? 0), 0),
      cpuMs(setup.pid, setup.pid) ?? 0,
    ];
    const before = read();
    into.push(await callsPerSecond(() => echo(setup.client), PER_ROUND, IN_FLIGHT));
    read().forEach((value, i) => {
      cpuInto[i] = (cpuInto[i] as number) + value - (before[i] as number);
    });
  };
  for (let round = 0; round < ROUNDS; round++) {
    await measure(full, rates.full, cpu.full);
    await measure(off, rates.off, cpu.off);
  }
  const a = median(rates.full);
  const b = median(rates.off);
  // The records really were filed, signed and logged.
  await full.client.close();
  const ledger = Ledger.open(join(dir, 'full.sqlite'), { readOnly: true });
  const stored = ledger.count();
  const signed = ledger.list({ limit: 1 })[0]?.record.integrity?.signature !== undefined;
  const logged = ledger.log().size();
  ledger.close();
  const perCallUs = (ms: number) => (ms * 1000) / (ROUNDS * PER_ROUND);
  const perCall = (ms: number[]) =>
    ms
      .slice(0, 3)
      .map((value) => perCallUs(value).toFixed(0).padStart(4))
      .join(' / ');
  const mainThread = { full: perCallUs(cpu.full[3] as number), off: perCallUs(cpu.off[3] as number) };
  console.log(
    `tools/call, ${PAYLOAD.length} B echo, prov-v0.1, ${IN_FLIGHT} in flight; median of ${ROUNDS} rounds of ${PER_ROUND} after ${WARMUP} warm-up calls each`,
  );
  console.log(
    `signed, full provenance, ledger with its log: ${a.toFixed(0)} calls/s (${stored} records filed, ${logged} leaves, signed: ${signed})`,
  );
  console.log(`provenance off, no ledger:                   ${b.toFixed(0)} calls/s`);
  console.log(
    `CPU µs per call, client / gateway / upstream: full ${perCall(cpu.full)}; off ${perCall(cpu.off)}`,
  );
  console.log(
    `CPU µs per call, gateway's main thread: full ${mainThread.full.toFixed(0)}, off ${mainThread.off.toFixed(0)}` +
      ` (where cores are to spare and that thread is the bound, calls/s go as its inverse: ${(mainThread.off / mainThread.full).toFixed(2)}x)`,
  );
  const together = (ms: number[]) => perCallUs(ms.slice(0, 3).reduce((sum, value) => sum + value, 0));
  console.log(
    `CPU µs per call, all three processes: full ${together(cpu.full).toFixed(0)}, off ${together(cpu.off).toFixed(0)}` +
      ' (where the cores are all busy, calls/s go as its inverse)',
  );
  console.log(`ratio: ${(a / b).toFixed(2)}x (target >= 0.8)`);
} finally {
  await full.client.close().catch(() => {});
  await off.client.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
}
