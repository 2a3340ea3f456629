/**
 * One record's page: what the row and the record say, the server's checks
 * (digest, signature, each claimed method's contract, evidence anchors,
 * inclusion in the latest checkpoint), the envelope and record side by side,
 * links along its lineage, and the panel where the page's own script checks
 * it again in the browser.
 */
import type { KeyObject } from 'node:crypto';
import { EnvelopeError } from '../../errors/index.ts';
import { parseAnchor, resolveAnchor } from '../../pointer/anchor.ts';
import { checkContracts } from '../../provenance/contracts.ts';
import { checkSignature } from '../../provenance/integrity.ts';
import type { Artifact, ProvRecord } from '../../provenance/record.ts';
import type { Ledger, LedgerEntry } from '../store.ts';
import { verifyEntry } from '../verify.ts';
import { inclusionOf, latestCheckpoint, STATE_LABEL } from './checks.ts';
import { escapeHtml as e, hrefPart, jsonBlock } from './html.ts';
import { childrenOf } from './lineage.ts';

/** The script that re-verifies a record in the browser (assets.ts serves it). */
export const VERIFY_SCRIPT = '/ledger/assets/verify.js';
const MAX_CHILDREN = 50;
const MAX_EVIDENCE_CHARS = 2000;

/** The entries a run id or record digest names, newest last; LEDGER_RECORD_NOT_FOUND when none. */
export function entriesFor(ledger: Ledger, key: string): LedgerEntry[] {
  const entries = ledger.find(key);
  if (entries.length === 0) {
    throw new EnvelopeError('LEDGER_RECORD_NOT_FOUND', `No record with run id or digest ${key}`, { key });
  }
  return entries;
}

function runLink(runId: string): string {
  return `<a href="/ledger/runs/${e(hrefPart(runId))}">${e(runId)}</a>`;
}

function statusCell(status: string): string {
  return `<td class="state state-${e(status)}">${e(status)}</td>`;
}

function artifactRows(artifacts: readonly Artifact[], direction: string): string[] {
  return artifacts.map(
    (artifact) =>
      `<tr><th scope="row"><code>${e(artifact.artifact_id)}</code></th><td>${e(direction)}</td><td>${e(
        artifact.labels?.role ?? '—',
      )}</td><td>${e(artifact.media_type)}</td><td>${
        artifact.digest
          ? `<code class="digest">${e(`${artifact.digest.alg}:${artifact.digest.value}`)}</code>`
          : '—'
      }</td><td>${artifact.size_bytes === undefined ? '—' : e(String(artifact.size_bytes))}</td></tr>`,
  );
}

function clip(text: string): string {
  return text.length <= MAX_EVIDENCE_CHARS
    ? text
    : `${text.slice(0, MAX_EVIDENCE_CHARS)}… (${text.length} characters)`;
}

/** What an anchor names, when the content is held here: the envelope's result stands for the result artifact. */
function evidenceValue(record: ProvRecord, envelope: Record<string, unknown> | null, source: string): string {
  let anchor: ReturnType<typeof parseAnchor>;
  try {
    anchor = parseAnchor(source);
  } catch (error) {
    return `<span class="state-fail">invalid anchor: ${e((error as Error).message)}</span>`;
  }
  const artifact = record.outputs.find((output) => output.artifact_id === anchor.artifactId);
  if (envelope === null || artifact?.labels?.role !== 'result') {
    return 'content not held in the ledger';
  }
  const result = envelope.result;
  const content = anchor.kind === 'text' && typeof result !== 'string' ? JSON.stringify(result) : result;
  const resolution = resolveAnchor(anchor, content);
  if (!resolution.resolved)
    return `<span class="state-fail">does not resolve: ${e(resolution.reason)}</span>`;
  const text =
    typeof resolution.value === 'string'
      ? resolution.value
      : (JSON.stringify(resolution.value, null, 2) ?? 'null');
  return `<pre>${e(clip(text))}</pre>`;
}

/** A scrollable block, focusable so that a keyboard can scroll it; its landmark name differs from its section's. */
function scrollBox(id: string, title: string, body: string): string {
  return `<section class="json" aria-labelledby="${id}"><h3 id="${id}">${e(title)}</h3>
<div class="scroll" tabindex="0" role="region" aria-label="${e(title)} as JSON (scrollable)"><pre>${body}</pre></div></section>`;
}

/** The verification panel, exactly as the browser script expects it. */
export function verificationPanel(key: string): string {
  return `<section id="verification" aria-labelledby="verification-title" data-proof-url="/ledger/api/runs/${e(hrefPart(key))}"><h2 id="verification-title">Verify in this browser</h2><p>The button below runs this page's own script: it fetches the proof data, recomputes the record and envelope digests and the log leaf's hash, checks the Ed25519 signatures and the inclusion proof up to the signed checkpoint itself with your browser's Web Crypto, so you need not trust the server that sent this page. Paste a public key you obtained elsewhere to check against it rather than the key the server names.</p><label for="trusted-key">Public key you trust (optional)</label><textarea id="trusted-key"></textarea><button type="button" id="verify-button">Verify</button><ol id="verification-result" aria-live="polite"></ol></section>`;
}

export async function renderRecordPage(
  ledger: Ledger,
  key: string,
  publicKey: KeyObject | undefined,
): Promise<{ title: string; main: string; scripts: string[] }> {
  const entries = entriesFor(ledger, key);
  const entry = entries.at(-1) as LedgerEntry;
  const { record, envelope } = entry;
  const latest = latestCheckpoint(ledger, publicKey);
  const inclusion = inclusionOf(ledger, entry, latest);
  const columns = ledger
    .database()
    .prepare('SELECT principal, outcome, error_code FROM records WHERE seq = ?')
    .get(entry.seq) as
    | { principal: string | null; outcome: string | null; error_code: string | null }
    | undefined;
  const report = await verifyEntry(entry, publicKey ? { publicKey } : {});
  const contracts = checkContracts({
    record,
    ...(envelope ? { envelope } : {}),
    ...(publicKey ? { publicKey } : {}),
  });
  const children = childrenOf(ledger, entry.run_id, MAX_CHILDREN);
  const parents = record.parents ?? [];
  const signature = record.integrity?.signature;
  const signatureCheck = signature ? checkSignature(record, publicKey) : undefined;

  const others =
    entries.length > 1
      ? `<p>${entries.length} records carry this run id; this is the newest. The others: ${entries
          .slice(0, -1)
          .map((other) => `<a href="/ledger/runs/sha256:${e(other.record_digest)}">seq ${other.seq}</a>`)
          .join(', ')}.</p>`
      : '';
  const facts: Array<[string, string]> = [
    ['Run id', `<code>${e(entry.run_id)}</code>`],
    ['Stored (UTC)', `<time datetime="${e(entry.created_at)}">${e(entry.created_at)}</time>`],
    ['Upstream', e(entry.upstream ?? '—')],
    [
      'Tool',
      `<code>${e(entry.tool)}</code> (record: <code>${e(record.tool?.name ?? '')}</code> ${e(record.tool?.version ?? '')})`,
    ],
    ['Principal', e(columns?.principal ?? '—')],
    ['Outcome', e(columns?.outcome ?? '—')],
    ['Error code', columns?.error_code ? `<code>${e(columns.error_code)}</code>` : '—'],
    ['Record digest', `<code class="digest">sha256:${e(entry.record_digest)}</code>`],
    ['Storage order (seq)', e(String(entry.seq))],
  ];
  const methodRows = contracts.map(
    (finding) =>
      `<tr><th scope="row"><code>${e(finding.method)}</code></th>${statusCell(finding.status)}<td>${e(finding.message)}</td></tr>`,
  );
  const claimed = new Set(contracts.map((finding) => finding.method));
  for (const method of record.methods ?? []) {
    if (!claimed.has(method))
      methodRows.push(
        `<tr><th scope="row"><code>${e(method)}</code></th>${statusCell('skip')}<td>no contract to check</td></tr>`,
      );
  }
  const evidence = (record.evidence ?? []).map(
    (item) =>
      `<tr><th scope="row"><code>${e(item.field)}</code></th><td><code>${e(item.source)}</code></td><td>${evidenceValue(record, envelope, item.source)}</td></tr>`,
  );
  const checkpointText = latest
    ? `Latest checkpoint <code>${e(latest.checkpoint.origin)}</code> at tree size ${latest.checkpoint.size}${
        latest.signed === null
          ? ' (signature not checked: no public key given)'
          : latest.signed
            ? ', signed by the configured key'
            : ', <strong>not signed by the configured key</strong>'
      }.`
    : 'No checkpoint has been written yet.';
  const main = `<h1>Run <code>${e(entry.run_id)}</code></h1>
${others}
<dl class="facts">${facts.map(([term, value]) => `<dt>${e(term)}</dt><dd>${value}</dd>`).join('')}</dl>
<p><a href="/ledger/runs/${e(hrefPart(entry.run_id))}/lineage">Lineage graph</a></p>

<section aria-labelledby="log-title"><h2 id="log-title">In the transparency log</h2>
<p>${checkpointText} This record is leaf ${inclusion.index === undefined ? '<strong>missing</strong>' : e(String(inclusion.index))}; inclusion in the latest checkpoint: <strong>${e(STATE_LABEL[inclusion.state])}</strong>.</p>
</section>

<section aria-labelledby="signature-title"><h2 id="signature-title">Signature</h2>
${
  signature
    ? `<p>Algorithm <code>${e(signature.alg)}</code>, key id <code>${e(signature.key_id)}</code>: <strong>${e(
        signatureCheck?.status === 'unverifiable' ||
          (signatureCheck?.status === 'pass' && publicKey === undefined)
          ? 'not checked'
          : (signatureCheck?.status ?? ''),
      )}</strong> — ${e(signatureCheck?.message ?? '')}</p>`
    : '<p>The record is not signed.</p>'
}
</section>

<section aria-labelledby="methods-title"><h2 id="methods-title">Claimed methods and their contracts</h2>
${
  methodRows.length
    ? `<table><caption>Each method the record claims, checked against its contract</caption><thead><tr><th scope="col">Method</th><th scope="col">Result</th><th scope="col">Detail</th></tr></thead><tbody>${methodRows.join('\n')}</tbody></table>`
    : '<p>The record claims no methods.</p>'
}
</section>

<section aria-labelledby="artifacts-title"><h2 id="artifacts-title">Artifacts</h2>
<table><caption>Inputs and outputs with their digests</caption><thead><tr><th scope="col">Artifact</th><th scope="col">Direction</th><th scope="col">Role</th><th scope="col">Media type</th><th scope="col">Digest</th><th scope="col">Bytes</th></tr></thead>
<tbody>${[...artifactRows(record.inputs ?? [], 'input'), ...artifactRows(record.outputs ?? [], 'output')].join('\n')}</tbody></table>
</section>

<section aria-labelledby="evidence-title"><h2 id="evidence-title">Evidence</h2>
${
  evidence.length
    ? `<table><caption>Evidence anchors and what they name</caption><thead><tr><th scope="col">Field</th><th scope="col">Anchor</th><th scope="col">Resolves to</th></tr></thead><tbody>${evidence.join('\n')}</tbody></table>`
    : '<p>The record carries no evidence anchors.</p>'
}
</section>

<section aria-labelledby="checks-title"><h2 id="checks-title">Checked on the server</h2>
<p>Verdict: <strong>${e(report.ok ? report.coverage.verdict : 'failed')}</strong>.</p>
<ul class="checks">${report.checks.map((check) => `<li><span class="state state-${e(check.status)}">${e(check.status)}</span> <code>${e(check.check)}</code>: ${e(check.message)}</li>`).join('\n')}</ul>
</section>

<section aria-labelledby="lineage-title"><h2 id="lineage-title">Lineage</h2>
<h3>Parents</h3>
${parents.length ? `<ul>${parents.map((parent) => `<li>${runLink(parent)}</li>`).join('')}</ul>` : '<p>None.</p>'}
<h3>Children</h3>
${children.length ? `<ul>${children.map((child) => `<li>${runLink(child)}</li>`).join('')}</ul>` : '<p>None in this ledger.</p>'}
</section>

<section aria-labelledby="documents-title"><h2 id="documents-title">Envelope and record</h2>
<div class="side-by-side">
${scrollBox('envelope-title', 'Envelope', envelope === null ? 'The envelope was not kept with this record.' : jsonBlock(envelope))}
${scrollBox('record-title', 'Record', jsonBlock(record))}
</div>
</section>

${verificationPanel(entry.run_id)}`;
  return { title: `Run ${entry.run_id} — mcp-envelope ledger`, main, scripts: [VERIFY_SCRIPT] };
}
