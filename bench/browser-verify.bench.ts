/**
 * The record page's verification (src/ledger/web/browser/checks.ts: Web
 * Crypto and the project's canonical JSON) against the server's own checks of
 * the same proofs with node:crypto (parseCheckpoint, checkpointSignedBy,
 * verifyInclusion, checkRecordDigest, checkSignature, digestBytes), measured
 * in the same run on the same proofs of a real ledger: per-proof time, and the
 * ratio. When Chromium is there (CHROMIUM_PATH, /usr/bin/chromium), the same
 * module is also timed in it, loaded unbundled from serveLedgerAsset as a page
 * loads it. Needs the build (dist/) for the Chromium part.
 */
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { canonicalize, digestBytes, parseJsonLossless } from '../src/canonical/index.ts';
import { Ledger, writeCheckpoint } from '../src/ledger/index.ts';
import { checkpointSignedBy, parseCheckpoint } from '../src/ledger/log/checkpoint.ts';
import { leafHash } from '../src/ledger/log/hashing.ts';
import { verifyInclusion } from '../src/ledger/log/proofs.ts';
import { serveLedgerAsset } from '../src/ledger/web/assets.ts';
import { outcomeOf, type RunProof, verifyRunProof } from '../src/ledger/web/browser/checks.ts';
import { proofData } from '../src/ledger/web/proof.ts';
import { buildCallRecord, DEFAULT_CONTROLS } from '../src/provenance/index.ts';
import { checkRecordDigest, checkSignature, signRecord } from '../src/provenance/integrity.ts';
import type { ProvRecord } from '../src/provenance/record.ts';

const N = Number(process.env.BROWSER_VERIFY_BENCH_N ?? 2000);
const SAMPLES = 300;
const ROUNDS = 5;
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (path): path is string => Boolean(path) && existsSync(path as string),
);

const keys = generateKeyPairSync('ed25519');
const dir = mkdtempSync(join(tmpdir(), 'browser-verify-bench-'));

/** The server's checks of one proof, with node:crypto; true when all hold. */
function serverChecks(proof: RunProof): boolean {
  const leaf = Buffer.from(proof.leaf as string, 'base64');
  const text = leaf.toString('utf8');
  const object = parseJsonLossless(text).lossless as unknown as {
    record: ProvRecord;
    record_digest: string;
    envelope_digest: string;
  };
  const checkpoint = parseCheckpoint(proof.checkpoint as string);
  const path = (proof.inclusion?.hashes ?? []).map((hash) => Buffer.from(hash, 'base64'));
  const envelope =
    proof.envelope_text === null ? null : `sha256:${digestBytes(proof.envelope_text, 'sha256').value}`;
  return (
    canonicalize(object) === text &&
    verifyInclusion(leafHash(leaf), proof.leaf_index as number, checkpoint.size, path, checkpoint.root) &&
    checkpointSignedBy(checkpoint, keys.publicKey) &&
    checkRecordDigest(object.record).status === 'pass' &&
    `sha256:${checkRecordDigest(object.record).expected?.value}` === object.record_digest &&
    checkSignature(object.record, keys.publicKey).status === 'pass' &&
    envelope === object.envelope_digest
  );
}

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
}

try {
  const ledger = Ledger.open(join(dir, 'ledger.sqlite'));
  for (let i = 0; i < N; i++) {
    const runId = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
    const result = { text: 'x'.repeat(200), i };
    const record = buildCallRecord({
      runId,
      tool: { name: 'echo', version: '1.0.0', adapter: 'mcp' },
      action: 'wrapped',
      inputs: [
        { id: 'arguments', mediaType: 'application/json', content: { json: { text: 'x'.repeat(200) } } },
      ],
      result,
      attached: true,
      controls: { ...DEFAULT_CONTROLS, captureProvenance: true, provenanceMode: 'full' },
    });
    const provenance = signRecord(record, keys.privateKey);
    ledger.insert({ schema_version: 'mcp.envelope.v0.1', result, provenance }, { upstream: 'up' });
  }
  writeCheckpoint(ledger, keys.privateKey);
  const proofs: RunProof[] = Array.from({ length: SAMPLES }, (_, i) =>
    proofData(
      ledger,
      `00000000-0000-4000-8000-${String(Math.floor((i * N) / SAMPLES)).padStart(12, '0')}`,
      keys.publicKey,
    ),
  );
  ledger.close();

  const browserMs: number[] = [];
  const serverMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    let start = performance.now();
    for (const proof of proofs) {
      if (outcomeOf(await verifyRunProof(proof)) !== 'pass') throw new Error('browser checks failed');
    }
    browserMs.push((performance.now() - start) / proofs.length);
    start = performance.now();
    for (const proof of proofs) if (!serverChecks(proof)) throw new Error('server checks failed');
    serverMs.push((performance.now() - start) / proofs.length);
  }
  const a = median(browserMs);
  const b = median(serverMs);
  console.log(`proofs of a ${N}-record ledger, ${SAMPLES} per round, median of ${ROUNDS} rounds:`);
  console.log(`browser checks (Web Crypto, in Node):        ${a.toFixed(3)} ms per proof`);
  console.log(`server checks (node:crypto, same proofs):    ${b.toFixed(3)} ms per proof`);
  console.log(`ratio browser/server: ${(a / b).toFixed(2)}x`);

  if (CHROMIUM === undefined) {
    console.log('Chromium: not found (CHROMIUM_PATH, /usr/bin/chromium), its figure is skipped');
  } else {
    const server = createServer((req, res) => {
      const path = req.url ?? '/';
      if (path.startsWith('/ledger/assets/') && serveLedgerAsset(res, path.slice('/ledger/assets/'.length)))
        return;
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>bench</title>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
      ],
    });
    try {
      const page = await browser.newPage();
      await page.goto(origin);
      const inPage: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        inPage.push(
          await page.evaluate(async (all) => {
            const checks = await import('/ledger/assets/lib/ledger/web/browser/checks.js' as string);
            const start = performance.now();
            for (const proof of all) {
              if (checks.outcomeOf(await checks.verifyRunProof(proof)) !== 'pass')
                throw new Error('failed in Chromium');
            }
            return (performance.now() - start) / all.length;
          }, proofs),
        );
      }
      const c = median(inPage);
      console.log(`browser checks in Chromium (same module, served unbundled): ${c.toFixed(3)} ms per proof`);
      console.log(`ratio Chromium/server: ${(c / b).toFixed(2)}x`);
    } finally {
      await browser.close();
      server.close();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
