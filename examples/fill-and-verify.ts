/**
 * Fills a document through a running gateway, downloads it from the gateway,
 * and keeps it beside the provenance record of the call that made it, ready
 * for `mcp-envelope verify`:
 *
 *   npm start                                   (in another terminal)
 *   node examples/fill-and-verify.ts [MCP URL [FOLDER]]   default http://127.0.0.1:8787/mcp, examples/downloads
 *   npx mcp-envelope verify examples/downloads/record.json --artifacts examples/downloads
 *
 * The template server (examples/template-server, the gateway's `templates`
 * upstream, `"artifacts": "shared"`) stores the document in the gateway's
 * artifact store and answers with its `download_id` and a link to the
 * gateway's own /api/download; the gateway registers the document's SHA-256
 * as an output artifact of the call's record.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CallToolResult, Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = new URL(process.argv[2] ?? 'http://127.0.0.1:8787/mcp');
const out = process.argv[3] ?? join(import.meta.dirname, 'downloads');
/** Where the gateway puts a call's provenance record in the result's `_meta`. */
const PROVENANCE = 'mcp-envelope/provenance';

interface Artifact {
  artifact_id: string;
  digest?: { alg: string; value: string };
  labels?: Record<string, string>;
}

const client = new Client({ name: 'fill-and-verify', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(url));
try {
  const result = (await client.callTool({
    name: 'templates__fill_template',
    arguments: {
      template_id: 'meeting-minutes',
      values: {
        meeting_title: 'Quarterly planning',
        meeting_date: '2026-03-02',
        attendees: ['Ada Lovelace', 'Grace Hopper'],
      },
    },
    // Ask for the call's provenance record (it also goes to the gateway's ledger).
    _meta: { capture_provenance: true },
  })) as CallToolResult;
  const envelope = result.structuredContent as {
    ok: boolean;
    data?: { download_id: string; download_url: string };
    error?: { code: string; message: string };
  };
  if (!envelope.ok)
    throw new Error(`fill_template failed: ${envelope.error?.code} ${envelope.error?.message}`);
  const record = result._meta?.[PROVENANCE] as { run_id: string; outputs: Artifact[] };
  const artifact = record.outputs.find((output) => output.labels?.role === 'artifact');
  if (!artifact) throw new Error('The record names no stored document');

  // The template server shares the gateway's store and knows its address: the link is the gateway's.
  const link = envelope.data?.download_url ?? '';
  const download = await fetch(link);
  if (!download.ok) throw new Error(`GET ${link}: ${download.status} ${await download.text()}`);
  const bytes = Buffer.from(await download.arrayBuffer());

  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, artifact.artifact_id), bytes);
  writeFileSync(join(out, 'record.json'), `${JSON.stringify(record, null, 2)}\n`);
  console.log(`run ${record.run_id}: ${artifact.artifact_id}, ${bytes.length} bytes`);
  console.log(`  link ${link}`);
  console.log(`  sha256 in the record: ${artifact.digest?.value}`);
  console.log(`  wrote ${join(out, artifact.artifact_id)} and ${join(out, 'record.json')}`);
} finally {
  await client.close();
}
